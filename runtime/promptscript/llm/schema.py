"""What a model may answer, checked before anything acts on it (a model's answer is hostile
input): a plan (spec: "Campos del Plan") for plan/do/run_agent/client calls, an object of
decide()'s schema, a boolean for judge, a text for summarize. Bounded: at most
MAX_ANSWER_CHARS of text, JSON nested at most MAX_JSON_DEPTH deep. Each failure is a
``BadAnswer`` whose message is what the model is told when it is asked again."""

from __future__ import annotations

import json
import math

from wire.protocol import PS_ACTIONS, PS_PLAN_KEYS

MAX_ANSWER_CHARS = 512 << 10  # a plan may carry a file's content; the worker's requests are ≤ 1 MiB
MAX_JSON_DEPTH = 32
# A summary's size as the memory stores it (JSON, UTF-8): with the other fields at their bounds
# it always fits the memory's 8 KiB (memory.py), so what summarize() returns is what is kept.
MAX_SUMMARY_BYTES = 4000
SCHEMA_TYPES = {"string": str, "number": (int, float), "boolean": bool, "array": list, "object": dict}
FENCE = "```"


class BadAnswer(Exception):
    """A model's answer that is not what was asked for (the message says why)."""


def _depth(value, limit: int) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _unfence(body: str) -> str:
    """The text inside a ```lang ... ``` fence around all of ``body`` (stripped), else ``body``:
    plain string operations, linear in the text (a regex here was quadratic on a hostile answer)."""
    if len(body) < 2 * len(FENCE) or not (body.startswith(FENCE) and body.endswith(FENCE)):
        return body
    inner = body[len(FENCE):-len(FENCE)]
    start = 0
    while start < len(inner) and inner[start].isascii() and inner[start].isalpha():
        start += 1  # the fence's language tag
    return inner[start:].strip()


def _loads(body: str):
    """The JSON of ``body``; else the one object it holds between prose (models often add some)."""
    try:
        return json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start <= 0 or end <= start:
            raise
        return json.loads(body[start:end + 1], parse_constant=_no_constant, parse_float=_finite)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent; one too large for a float (1e999 would be
    infinity) is refused, as NaN and Infinity are."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range for a number")
    return value


def _unicode(value) -> None:
    """Every string (keys too) encodes as UTF-8: a lone surrogate ("\\ud800") would break the
    frame that carries the value to the worker."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadAnswer("the answer has a string that is not valid Unicode (a lone surrogate escape such as "
                        "\\ud800); write text only") from None


def parse_json(text: str):
    """The JSON value in a model's text (a ```json fence around it is allowed)."""
    if len(text) > MAX_ANSWER_CHARS:
        raise BadAnswer(f"the answer has {len(text)} characters, more than the {MAX_ANSWER_CHARS} allowed")
    body = _unfence(text.strip())
    try:
        value = _loads(body)
    except RecursionError:
        raise BadAnswer(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadAnswer(f"the answer is not valid JSON ({str(exc)[:120]}); answer with one JSON object only") from None
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise BadAnswer(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    _unicode(value)
    return value


def check_plan(value, allowed: list[str], no_ask: bool) -> dict:
    """A plan {action, args, done, confidence?, reason?} whose action the policy allows."""
    if type(value) is not dict:
        raise BadAnswer("a plan must be a JSON object {action, args, done}")
    unknown = [k for k in value if k not in PS_PLAN_KEYS]
    if unknown:
        raise BadAnswer(f"unknown plan field '{str(unknown[0])[:40]}' (fields: {', '.join(PS_PLAN_KEYS)})")
    for field, kind, word in (("action", str, "string"), ("args", dict, "object"), ("done", bool, "boolean")):
        if type(value.get(field)) is not kind:
            raise BadAnswer(f"the plan needs '{field}' as a {word}")
    action = value["action"]
    if action not in PS_ACTIONS:
        raise BadAnswer(f"unknown action '{action[:40]}' (actions allowed here: {', '.join(allowed)})")
    if action == "ASK_USER" and no_ask:
        raise BadAnswer("ASK_USER is not allowed (no_ask): decide yourself, or REPORT what you need")
    if action not in allowed:
        raise BadAnswer(f"action {action} is not allowed by the policy here (allowed: {', '.join(allowed)})")
    confidence = value.get("confidence")
    if "confidence" in value and not (type(confidence) in (int, float) and 0 <= confidence <= 1):
        raise BadAnswer("confidence must be a number from 0 to 1")
    if "reason" in value and type(value["reason"]) is not str:
        raise BadAnswer("reason must be a string")
    return value


def check_schema(schema) -> dict:
    """decide()'s schema: {field: "string" | "number" | "boolean" | "array" | "object"}."""
    if type(schema) is not dict or not schema:
        raise ValueError('decide() needs schema: an object of field types, e.g. {next: "string", n: "number"}')
    for field, kind in schema.items():
        if kind not in SCHEMA_TYPES:
            raise ValueError(f"decide() schema field '{str(field)[:40]}' must be one of "
                             f"{', '.join(SCHEMA_TYPES)}, not {json.dumps(kind)[:40]}")
    if len(schema) > 100:
        raise ValueError("decide() schema has more than 100 fields")
    return schema


def check_decision(value, schema: dict) -> dict:
    if type(value) is not dict:
        raise BadAnswer(f"answer with a JSON object with the fields {', '.join(schema)}")
    out = {}
    for field, kind in schema.items():
        if field not in value:
            raise BadAnswer(f"the answer lacks the field '{field}' ({kind})")
        item = value[field]
        python = SCHEMA_TYPES[kind]
        if type(item) is bool and kind == "number" or not isinstance(item, python):
            raise BadAnswer(f"the field '{field}' must be a {kind}")
        out[field] = item
    return out


def check_verdict(value) -> bool:
    if type(value) is bool:
        return value
    if type(value) is dict and type(value.get("answer")) is bool and len(value) <= 2:
        return value["answer"]
    raise BadAnswer('answer with {"answer": true} or {"answer": false}')


def check_summary(value) -> str:
    text = value.get("summary") if type(value) is dict else value
    if type(text) is not str:
        raise BadAnswer('answer with {"summary": "<the new summary>"}')
    size = len(json.dumps(text, ensure_ascii=False).encode("utf-8"))
    if size > MAX_SUMMARY_BYTES:
        raise BadAnswer(f"the summary takes {size} bytes, over the {MAX_SUMMARY_BYTES} allowed; "
                        "write a shorter one (at most 1500 characters, and 4000 bytes as UTF-8 JSON)")
    return text
