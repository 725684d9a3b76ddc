"""The operator's chat model: any OpenAI-compatible `POST {base}/v1/chat/completions` server
(vLLM, Ollama, llama.cpp's server, LiteLLM, OpenAI itself), named by `KINDMEM_LLM_URL` and
`KINDMEM_LLM_MODEL`, called through the `openai` package with `base_url`.

The answer is asked for as JSON by JSON Schema (`response_format` `json_schema`, strict), so a
server that enforces it cannot produce another shape. A server that refuses that format (a 400
or 422 naming it, as older llama.cpp and Ollama builds answer) is asked again with `json_object`
and the schema in the prompt, and this process remembers to ask it so from then on. Whatever
comes back is checked again by `extraction.answers`: a strict server is a convenience, never the
check.

Without a configured model there is no provider: `require_provider` raises
`extraction-unavailable` (503), as semantic search without an embedder answers
`embedding-unavailable`. Nothing is downloaded at run time: the model is the operator's server.
Failures (a timeout, a refused connection, a 429 after the client's retries, a 5xx, a body that
is not a completion) surface as `ChatFailed`, whose message names the cause and never the key.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from api.errors import ExtractionUnavailable
from extraction.metering import usage_counted

logger = logging.getLogger(__name__)

# A health probe (`GET {base}/v1/models`) must answer fast even when the server hangs.
HEALTH_PROBE_TIMEOUT_SECONDS = 2.0
# Characters of an answer kept, at most: what a refused answer records for the operator.
MAX_ANSWER_CHARS = 20_000


class ChatFailed(Exception):
    """The model did not answer with a completion (after the client's bounded retries)."""


@dataclass(frozen=True)
class Completion:
    """What the model answered: its text (or its refusal), and the tokens the provider counted
    (`usage`; estimated from the characters, and said so, when a server reports none or
    reports nonsense)."""

    text: str
    tokens_in: int
    tokens_out: int
    model: str
    response_format: str
    refusal: str | None = None
    truncated: bool = False  # finish_reason "length": the answer was cut off
    usage_estimated: bool = False
    # the server's counts were not believed (`extraction.metering.usage_counted`): the job fails
    usage_invalid: str | None = None


def api_base(url: str) -> str:
    """The `openai` client's base URL: `{url}/v1`, accepting a URL given with its `/v1`."""
    base = url.rstrip("/")
    return base if base.endswith("/v1") else f"{base}/v1"


class ChatProvider:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_seconds: float = 60.0,
        retries: int = 2,
        response_format: str = "json_schema",
    ) -> None:
        import openai

        self.base_url = api_base(base_url)
        self.model = model
        self.response_format = response_format
        self._lock = threading.Lock()
        # A local server needs no key; the client insists on one, and sends it as a bearer.
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "no-key",
            timeout=timeout_seconds,
            max_retries=max(0, retries),
        )

    @property
    def host(self) -> str:
        """Where it is, for health and the console: scheme, host and port, no credentials."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"

    def complete(
        self, *, system: str, user: str, schema: dict[str, Any], schema_name: str
    ) -> Completion:
        """One completion of `system` and `user` asking for JSON of `schema`. `json_schema`
        first unless this server is known to refuse it; a refusal of that format is answered by
        asking again with `json_object` and the schema written into the prompt."""
        if self.response_format == "json_schema":
            try:
                return self._complete(system, user, schema, schema_name, "json_schema")
            except _FormatRefused as exc:
                logger.warning(
                    "%s refused response_format json_schema (%s); asking for json_object from now",
                    self.host,
                    exc,
                )
                with self._lock:
                    self.response_format = "json_object"
        return self._complete(system, user, schema, schema_name, "json_object")

    def _complete(
        self, system: str, user: str, schema: dict[str, Any], schema_name: str, mode: str
    ) -> Completion:
        import openai

        if mode == "json_schema":
            response_format: dict[str, Any] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": True, "schema": schema},
            }
        else:
            response_format = {"type": "json_object"}
            system = (
                f"{system}\n\nAnswer with one JSON object only, valid against this JSON Schema:\n"
                f"{json.dumps(schema, separators=(',', ':'))}"
            )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            # the messages and the format are the plain dicts the API takes, not its TypedDicts
            response = self._client.chat.completions.create(  # type: ignore[call-overload]
                model=self.model,
                messages=messages,
                response_format=response_format,
                temperature=0,
            )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if mode == "json_schema" and _names_the_format(exc):
                raise _FormatRefused(_describe(exc)) from exc
            raise ChatFailed(_describe(exc)) from exc
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise ChatFailed(_describe(exc)) from exc
        choices = getattr(response, "choices", None)
        if not choices:
            raise ChatFailed("The model's answer has no choices.")
        choice = choices[0]
        message = choice.message
        text = (message.content or "")[:MAX_ANSWER_CHARS]
        refusal = getattr(message, "refusal", None)
        usage = getattr(response, "usage", None)
        counted = usage_counted(
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
            asked=system + user,
            answer=text,
        )
        return Completion(
            text=text,
            tokens_in=counted.tokens_in,
            tokens_out=counted.tokens_out,
            model=str(getattr(response, "model", None) or self.model),
            response_format=mode,
            refusal=refusal if isinstance(refusal, str) and refusal else None,
            truncated=choice.finish_reason == "length",
            usage_estimated=counted.estimated,
            usage_invalid=counted.invalid,
        )

    def probe(self, *, timeout_seconds: float) -> None:
        """`GET {base}/v1/models`, no retries: raises ChatFailed unless the server answers.
        Cheap by design (a completion would cost the operator tokens on every /healthz)."""
        import openai

        try:
            self._client.with_options(timeout=timeout_seconds, max_retries=0).models.list()
        except openai.OpenAIError as exc:
            raise ChatFailed(_describe(exc)) from exc


class _FormatRefused(Exception):
    """The server refused `response_format: json_schema`."""


def _names_the_format(exc: Exception) -> bool:
    text = str(getattr(exc, "message", "") or exc).lower()
    body = getattr(exc, "body", None)
    if body is not None:
        text += " " + json.dumps(body, default=str).lower()
    return any(word in text for word in ("response_format", "json_schema", "schema", "format"))


def _describe(exc: Exception) -> str:
    """A failure as one line: its kind and, for an HTTP answer, its status (never the key, never
    the request)."""
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    if status is not None:
        return f"{kind}: the model's server answered HTTP {status}"
    return f"{kind}: {str(exc)[:200]}"


@cache
def _configured(
    url: str, model: str, api_key: str, timeout: float, retries: int, response_format: str
) -> ChatProvider | None:
    """One provider per distinct configuration (tests that change settings get a fresh one)."""
    if not url or not model:
        return None
    return ChatProvider(
        base_url=url,
        model=model,
        api_key=api_key,
        timeout_seconds=timeout,
        retries=retries,
        response_format=response_format,
    )


def get_provider() -> ChatProvider | None:
    """The configured chat model, or None when none is configured."""
    return _configured(
        settings.LLM_URL,
        settings.LLM_MODEL,
        settings.LLM_API_KEY,
        float(settings.LLM_TIMEOUT_SECONDS),
        settings.LLM_RETRIES,
        settings.LLM_RESPONSE_FORMAT,
    )


def require_provider() -> ChatProvider:
    """The configured chat model; `extraction-unavailable` when there is none."""
    provider = get_provider()
    if provider is None:
        raise ExtractionUnavailable(
            "Extraction needs a chat model: set KINDMEM_LLM_URL and KINDMEM_LLM_MODEL."
        )
    return provider


def extraction_health() -> dict[str, Any]:
    """What /healthz and the capability probe report: whether a model is configured, which,
    where, and whether its server answers now (one `GET /v1/models`, short, no retries)."""
    provider = get_provider()
    if provider is None:
        return {
            "ok": True,  # not configured is not broken: extraction then answers 503, loudly
            "available": False,
            "model": None,
            "url": None,
            "error": "No chat model is configured (KINDMEM_LLM_URL, KINDMEM_LLM_MODEL).",
        }
    report: dict[str, Any] = {"model": provider.model, "url": provider.host}
    try:
        provider.probe(timeout_seconds=HEALTH_PROBE_TIMEOUT_SECONDS)
    except ChatFailed as exc:
        return {**report, "ok": False, "available": False, "error": str(exc)}
    return {**report, "ok": True, "available": True, "error": None}
