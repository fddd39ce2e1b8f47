"""The providers' calls: openai, openrouter and custom (any OpenAI-compatible base URL) through
pydantic-ai's OpenAI chat model, anthropic through its Anthropic model; and their prices.
Imported on the first call that reaches a provider (pydantic-ai, the SDKs and genai-prices
weigh ~0.5 s of start-up). Each response is read through ``BoundedTransport``: at most
MAX_RESPONSE_BYTES, compressed or not. The SDKs' own retries are off: the layer retries,
inside the run's deadline."""

from __future__ import annotations

import asyncio
import threading
import zlib
from dataclasses import dataclass

import httpx2 as httpx  # the HTTP client the installed openai and anthropic SDKs use

from runtime.promptscript.llm.config import DEFAULT_MAX_TOKENS, LLMError, Resolved

MAX_RESPONSE_BYTES = 2 << 20
# A model genai-prices does not know is priced at this (USD per million tokens: input, output),
# above most models' list prices, so that --max-cost errs on the side of stopping.
FALLBACK_PRICE = (10.0, 30.0)
PRICE_PROVIDERS = {"openai": "openai", "openrouter": "openrouter", "anthropic": "anthropic"}


class ResponseTooLarge(Exception):
    """A response refused unread: over the size cap, or in an encoding not decoded here."""


@dataclass
class Reply:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


def decode_layers(data: bytes, header: str, limit: int) -> bytes:
    """``data`` with every Content-Encoding layer undone (the last applied first), each held to
    ``limit`` bytes: "identity, gzip" is a gzip body too. An unknown encoding is refused."""
    layers = [name.strip().lower() for name in header.split(",")]
    for name in reversed([n for n in layers if n not in ("", "identity")]):
        if name not in ("gzip", "x-gzip", "deflate"):
            raise ResponseTooLarge(f"the provider's response has Content-Encoding {name[:40]!r}, which is not "
                                   "supported (gzip, deflate or identity only)")
        inflater = zlib.decompressobj(47)  # gzip or zlib header
        try:
            data = inflater.decompress(data, limit + 1)
        except zlib.error:
            raise ResponseTooLarge(f"the provider's response is not valid {name} data") from None
        if len(data) > limit:
            raise ResponseTooLarge(f"the provider's response is over {limit} bytes once decompressed")
    return data


class BoundedTransport(httpx.AsyncBaseTransport):
    """Reads a whole response, refusing one over ``limit`` bytes (decompressed as well).
    ``answered[0]`` counts the bytes read of successful responses: an answer the provider
    bills even when it is refused here (too large, unreadable)."""

    def __init__(self, limit: int = MAX_RESPONSE_BYTES, answered: list[int] | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.limit = limit
        self.answered = answered if answered is not None else [0]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        chunks, size = [], 0
        billed = 200 <= response.status_code < 300
        try:
            async for chunk in response.stream:
                size += len(chunk)
                if billed:
                    self.answered[0] += len(chunk)
                if size > self.limit:
                    raise ResponseTooLarge(f"the provider's response is over {self.limit} bytes")
                chunks.append(chunk)
        finally:
            await response.aclose()
        data, headers = b"".join(chunks), httpx.Headers(response.headers)
        if "content-encoding" in headers:  # repeated headers: httpx joins them with commas
            data = decode_layers(data, headers["content-encoding"], self.limit)
            del headers["content-encoding"]
        return httpx.Response(response.status_code, headers=headers, content=data, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _messages(messages: list[tuple[str, str]]):
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart

    out = []
    for role, text in messages:
        if role == "system":
            out.append(ModelRequest(parts=[SystemPromptPart(content=text)]))
        elif role == "user":
            if out and isinstance(out[-1], ModelRequest):
                out[-1] = ModelRequest(parts=[*out[-1].parts, UserPromptPart(content=text)])
            else:
                out.append(ModelRequest(parts=[UserPromptPart(content=text)]))
        else:
            out.append(ModelResponse(parts=[TextPart(content=text)]))
    return out


class Providers:
    """The run's provider clients (one per provider, URL and key) and the event loop they use."""

    def __init__(self) -> None:
        self.models: dict = {}
        self.http: list = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.answered = [0]  # bytes of successful responses read, by every client (BoundedTransport)

    def model(self, cfg: Resolved):
        ident = (cfg.provider, cfg.base_url, cfg.api_key, cfg.model)
        if ident not in self.models:
            self.models[ident] = self._make(cfg)
        return self.models[ident]

    def _make(self, cfg: Resolved):
        http = httpx.AsyncClient(transport=BoundedTransport(answered=self.answered), headers={"Accept-Encoding": "identity"},
                                 timeout=httpx.Timeout(None))
        self.http.append(http)
        if cfg.provider == "anthropic":
            from anthropic import AsyncAnthropic
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            client = AsyncAnthropic(api_key=cfg.api_key, base_url=cfg.base_url, max_retries=0, http_client=http)
            return AnthropicModel(cfg.model, provider=AnthropicProvider(anthropic_client=client))
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(api_key=cfg.api_key or "none", base_url=cfg.base_url, max_retries=0, http_client=http)
        return OpenAIChatModel(cfg.model, provider=OpenAIProvider(openai_client=client))

    def call(self, cfg: Resolved, messages: list[tuple[str, str]], timeout_s: float) -> Reply:
        """One request; LLMError (retryable or not: ``retryable``) or asyncio.TimeoutError."""
        from pydantic_ai.direct import model_request

        settings = {"max_tokens": cfg.get("maxTokens", DEFAULT_MAX_TOKENS)}
        if "temperature" in cfg.options:
            settings["temperature"] = cfg.options["temperature"]
        coro = asyncio.wait_for(model_request(self.model(cfg), _messages(messages), model_settings=settings), timeout_s)
        response = self._run(coro)
        text = "".join(getattr(part, "content", "") for part in response.parts
                       if type(part).__name__ == "TextPart")
        usage = response.usage
        return Reply(text, int(usage.input_tokens or 0), int(usage.output_tokens or 0), response.model_name or cfg.model)

    def _run(self, coro):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.loop.run_until_complete(coro)
        box: list = []  # a caller inside an event loop (an async application): run ours beside it

        def run():
            try:
                box.append((True, self.loop.run_until_complete(coro)))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
                box.append((False, exc))

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def close(self) -> None:
        if self.loop is None:
            return
        for http in self.http:
            try:
                self.loop.run_until_complete(http.aclose())
            except Exception:  # noqa: BLE001 - closing: nothing left to report to
                pass
        self.loop.close()
        self.loop = None


def classify(exc: BaseException) -> tuple[str, bool]:
    """(what went wrong, whether another attempt may help) for an exception of a call."""
    status = getattr(exc, "status_code", None)
    if isinstance(exc, ResponseTooLarge):
        return str(exc), False
    if type(status) is int:
        what = f"HTTP {status}"
        if status in (401, 403):
            return what + " (the API key was refused: check it)", False
        if status == 404:
            return what + " (unknown model or wrong baseUrl)", False
        return what, status == 429 or status >= 500
    name = type(exc).__name__
    if "Connect" in name or isinstance(exc, (httpx.TransportError, OSError)):
        return "cannot reach the provider (connection failed)", True
    return f"the provider's answer could not be read ({name})", False


def price(provider: str, model: str, input_tokens: int, output_tokens: int) -> tuple[float, bool]:
    """(USD, known): from genai-prices, else FALLBACK_PRICE."""
    if provider == "mock":
        return 0.0, True
    from genai_prices import Usage, calc_price

    try:
        calc = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens), model_ref=model,
                          provider_id=PRICE_PROVIDERS.get(provider))
        return float(calc.total_price), True
    except LookupError:
        return fallback_price(input_tokens, output_tokens), False


def fallback_price(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * FALLBACK_PRICE[0] + output_tokens * FALLBACK_PRICE[1]) / 1e6


__all__ = ["Providers", "Reply", "LLMError", "classify", "price", "MAX_RESPONSE_BYTES"]
