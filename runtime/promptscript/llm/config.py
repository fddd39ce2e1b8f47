"""An LLM call's options, resolved: the client's options, overridden by the call's, with the
command line's --provider/--model/--base-url over both (whoever runs the script decides where
its calls go) and the environment as the last resort (OPENAI_API_KEY, OPENROUTER_API_KEY,
ANTHROPIC_API_KEY, in that order). ``apiKey`` is a key, or the name of an environment variable
holding one. Keys are kept in ``Secrets`` so that every text leaving the broker's LLM layer
(errors, the run log, replies to the worker) can be redacted."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from runtime.errors import ScriptError
from wire.protocol import PS_LLM_OPTIONS

PROVIDERS = ("openai", "openrouter", "anthropic", "custom", "mock")
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openrouter": "openai/gpt-4o-mini",
                  "anthropic": "claude-3-5-haiku-latest", "custom": "default", "mock": "mock"}
BASE_URLS = {"openai": "https://api.openai.com/v1", "openrouter": "https://openrouter.ai/api/v1",
             "anthropic": "https://api.anthropic.com"}
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]{1,100}")
MAX_KEY_CHARS = 4096
DEFAULT_MAX_TOKENS = 4096  # maxTokens when not given: the most output tokens a call is billed for
MAX_TEXT_OPTION = 64 << 10  # system, context
MAX_RETRIES = 10
MAX_TIMEOUT_MS = 600_000


class LLMError(ScriptError):
    """An LLM call that failed: a script error at the calling line (retry may catch it)."""


# option -> (check, what it must be)
def _num(low, high):
    return lambda v: type(v) in (int, float) and math.isfinite(v) and low <= v <= high


CHECKS = {
    "provider": (lambda v: v in PROVIDERS, f"one of {', '.join(PROVIDERS)}"),
    "apiKey": (lambda v: type(v) is str and 0 < len(v) <= MAX_KEY_CHARS, "a key or the name of an environment variable"),
    "model": (lambda v: type(v) is str and 0 < len(v) <= 200, "a model name"),
    "baseUrl": (lambda v: type(v) is str and re.match(r"https?://", v) is not None and len(v) <= 2000,
                "an http:// or https:// URL"),
    "temperature": (_num(0, 2), "a number from 0 to 2"),
    "maxTokens": (lambda v: type(v) is int and 1 <= v <= 1_000_000, "an integer from 1 to 1000000"),
    "maxRetries": (lambda v: type(v) is int and 0 <= v <= MAX_RETRIES, f"an integer from 0 to {MAX_RETRIES}"),
    "retryDelayMs": (lambda v: type(v) is int and 0 <= v <= 60_000, "an integer from 0 to 60000"),
    "timeoutMs": (lambda v: type(v) is int and 1 <= v <= MAX_TIMEOUT_MS, f"an integer from 1 to {MAX_TIMEOUT_MS}"),
    "no_ask": (lambda v: type(v) is bool, "true or false"),
    "mock_plan": (lambda v: True, "any value"),
    "system": (lambda v: type(v) is str and len(v) <= MAX_TEXT_OPTION, f"a string of at most {MAX_TEXT_OPTION} characters"),
    "context": (lambda v: type(v) is str and len(v) <= MAX_TEXT_OPTION, f"a string of at most {MAX_TEXT_OPTION} characters"),
}
assert set(CHECKS) == set(PS_LLM_OPTIONS)


@dataclass(frozen=True)
class CLIDefaults:
    """--provider, --model, --base-url (None: not given); --llm-key-env and --allow-base-url
    (the operator's allowlists of key variables and of URLs a script may choose)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    key_env: tuple = ()
    allow_base_urls: tuple = ()


@dataclass
class Resolved:
    provider: str
    model: str
    base_url: str | None
    api_key: str | None  # never shown: see Secrets
    options: dict  # the checked client options (temperature, maxTokens, ...)

    def get(self, name: str, default=None):
        return self.options.get(name, default)


class Secrets:
    """The keys this run has used; ``redact`` blanks each of them out of a text."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def add(self, key: str | None) -> None:
        if key and len(key) >= 4:
            self.keys.add(key)

    def redact(self, text: str) -> str:
        for key in self.keys:
            if key in text:
                text = text.replace(key, "[redacted]")
        return text


def check_options(opts: dict) -> dict:
    for name, value in opts.items():
        if name not in CHECKS:
            raise LLMError(f"unknown LLM option '{str(name)[:40]}' (options: {', '.join(PS_LLM_OPTIONS)})")
        ok, what = CHECKS[name]
        if not ok(value):
            shown = "the given value" if name == "apiKey" else repr(value)[:60]
            raise LLMError(f"LLM option {name} must be {what}, not {shown}")
    return opts


def detect_provider(environ) -> str:
    for provider, variable in KEY_VARIABLES.items():
        if environ.get(variable):
            return provider
    raise LLMError("no LLM provider: set OPENAI_API_KEY, OPENROUTER_API_KEY or ANTHROPIC_API_KEY, give "
                   "provider in the client's or the call's options, or run with --provider "
                   "(--provider mock runs offline)")


def _detected(environ, need_key: bool) -> str:
    try:
        return detect_provider(environ)
    except LLMError:
        if need_key:
            raise
        return "openai"  # a replay reaches no provider: the name is only logged


def resolve(opts: dict, cli: CLIDefaults, secrets: Secrets, environ=None, need_key: bool = True) -> Resolved:
    """The provider, model, URL and key of one call (``opts``: client options with the call's
    over them, already merged by the worker)."""
    environ = os.environ if environ is None else environ
    opts = check_options(dict(opts))
    provider = cli.provider or opts.get("provider") or _detected(environ, need_key)
    model = cli.model or opts.get("model") or DEFAULT_MODELS[provider]
    base_url = cli.base_url or opts.get("baseUrl") or BASE_URLS.get(provider)
    if provider == "custom" and base_url is None and need_key:
        raise LLMError("provider custom needs baseUrl (an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1), "
                       "in the options or with --base-url")
    if provider != "mock" and need_key:
        _check_destination(provider, base_url, cli)
    key = None if provider == "mock" or not need_key else _key(provider, opts.get("apiKey"), environ, cli)
    secrets.add(key)
    return Resolved(provider, model, base_url, key, opts)


def _loopback(url: str) -> bool:
    """Exactly "localhost" or an IP literal in 127.0.0.0/8 or ::1 (not a name like 127.x.example)."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_destination(provider: str, base_url: str | None, cli: CLIDefaults) -> None:
    """A call goes to its provider's own URL, a server on this machine (loopback), or a URL the
    operator gave (--base-url) or allowed (--allow-base-url): never to a URL a script chose
    elsewhere, which could collect its key or the data it sends."""
    if (base_url is None or base_url == BASE_URLS.get(provider) or base_url == cli.base_url
            or base_url in cli.allow_base_urls or _loopback(base_url)):
        return
    raise LLMError(f"LLM calls of provider {provider} go only to {BASE_URLS.get(provider, 'a server on this machine')}, "
                   f"a server on this machine, or a URL the operator allowed; baseUrl {base_url[:80]} "
                   f"is none of these (run with --allow-base-url {base_url[:80]} to allow it)")


def _key(provider: str, given: str | None, environ, cli: CLIDefaults) -> str | None:
    """The key: ``given`` itself, or the variable it names if the operator lets scripts read it
    (the provider's own variable, any provider's for custom, whose URL is loopback or the
    operator's, or one given with --llm-key-env)."""
    own = KEY_VARIABLES.get(provider)
    allowed = (*KEY_VARIABLES.values(), *cli.key_env) if provider == "custom" else (own, *cli.key_env)
    if given is not None and ENV_NAME.fullmatch(given) and given not in allowed:
        if given in environ:
            raise LLMError(f"apiKey names the environment variable {given}, which a script may not read: "
                           f"the operator allows it with --llm-key-env {given}")
        return given  # an all-capitals key, not a variable's name
    if given is not None and not ENV_NAME.fullmatch(given):
        return given  # the key itself
    variable = given or own
    if variable is None:  # custom without apiKey: a local server needs none
        return None
    value = environ.get(variable)
    if value:
        return value
    if provider == "custom":
        return None
    raise LLMError(f"no API key for provider {provider}: set the environment variable {variable} "
                   f"(or give apiKey: the key, or the name of the variable holding it)")
