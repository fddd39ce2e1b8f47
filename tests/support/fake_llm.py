"""A fake language-model provider on 127.0.0.1: OpenAI chat completions (POST
/v1/chat/completions) and Anthropic messages (POST /v1/messages). It records each request
(path, headers, JSON body) and answers from a script of responses: a plan (dict) or a text,
``Fail(status)`` (an HTTP error), ``Slow(seconds, answer)``; when the script is empty, a
REPORT done plan."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ECHO_KEY = "<<the key received>>"  # in an answer: replaced by the request's key
DONE = {"action": "REPORT", "args": {"message": "fake: done", "done": True}, "done": True}


@dataclass
class Fail:
    status: int
    body: str = '{"error": {"message": "fake failure"}}'


@dataclass
class Slow:
    seconds: float
    answer: object = None


@dataclass
class Raw:
    """A 200 response of these bytes with these extra headers (e.g. Content-Encoding)."""

    body: bytes
    headers: dict


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.queue: list = []
        self.usage = (100, 20)
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                    item = fake.queue.pop(0) if fake.queue else DONE
                if isinstance(item, Slow):
                    time.sleep(item.seconds)
                    item = DONE if item.answer is None else item.answer
                if isinstance(item, Fail):
                    return self.send(item.status, item.body.encode())
                if isinstance(item, Raw):
                    return self.send(200, item.body, item.headers)
                text = item if isinstance(item, str) else json.dumps(item)
                key = self.headers.get("x-api-key") or (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                text = text.replace(ECHO_KEY, key)  # a server echoing the key it received
                self.send(200, json.dumps(fake.reply(self.path, body.get("model", "?"), text)).encode())

            def send(self, status: int, data: bytes, headers: dict | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, *items) -> None:
        with self.lock:
            self.queue.extend(items)

    def reply(self, path: str, model: str, text: str) -> dict:
        p, c = self.usage
        if path.endswith("/messages"):
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": p, "output_tokens": c}}
        return {"id": "c1", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}

    def texts(self, i: int = -1) -> str:
        """Every message text of request ``i``, joined (OpenAI or Anthropic format)."""
        body = self.requests[i]["json"]
        parts = [body.get("system", "")] if isinstance(body.get("system"), str) else [
            b.get("text", "") for b in body.get("system", []) or []]
        for m in body["messages"]:
            content = m["content"]
            parts.extend([content] if isinstance(content, str) else [c.get("text", "") for c in content])
        return "\n".join(parts)

    def close(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()
