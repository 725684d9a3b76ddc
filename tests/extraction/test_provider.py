"""The chat model provider (extraction/provider.py) against a real local HTTP server that
speaks the chat-completions API: the structured-output request, the `json_object` fallback,
usage, refusals, timeouts, a 429 with Retry-After, malformed answers, health."""

from __future__ import annotations

import json

import pytest

from api.errors import ExtractionUnavailable
from extraction.prompt import answer_schema
from extraction.provider import (
    ChatFailed,
    ChatProvider,
    extraction_health,
    get_provider,
    require_provider,
)
from tests.extraction.conftest import Reply, completion

SCHEMA = answer_schema(["preference"])


def provider(url: str, **options: object) -> ChatProvider:
    defaults: dict[str, object] = {"model": "fake-llm-1", "retries": 0, "timeout_seconds": 5.0}
    return ChatProvider(base_url=url, **{**defaults, **options})  # type: ignore[arg-type]


def ask(chat: ChatProvider):
    return chat.complete(system="sys", user='{"messages": []}', schema=SCHEMA, schema_name="d")


def test_a_completion_is_asked_for_by_strict_json_schema_with_the_key(chat_server):
    # given a server that answers one completion
    chat_server.script = [completion({"decisions": []}, prompt_tokens=321, completion_tokens=12)]
    # when the provider asks (the URL given without its /v1)
    answer = ask(provider(chat_server.url, api_key="sk-secret"))
    # then it posted to /v1/chat/completions, strict JSON Schema, the key as a bearer
    [request] = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer sk-secret"
    body = request["json"]
    assert body["model"] == "fake-llm-1"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "d", "strict": True, "schema": SCHEMA},
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # and the answer carries the text and the provider's usage
    assert json.loads(answer.text) == {"decisions": []}
    assert (answer.tokens_in, answer.tokens_out, answer.usage_estimated) == (321, 12, False)
    assert answer.response_format == "json_schema"


def test_a_url_with_its_v1_is_taken_as_it_is(chat_server):
    chat_server.script = [completion({"decisions": []})]
    ask(provider(chat_server.url + "/v1/"))
    assert chat_server.requests[0]["path"] == "/v1/chat/completions"


def test_a_server_that_refuses_json_schema_is_asked_for_json_object_from_then_on(chat_server):
    # given a server that does only json_object: it refuses json_schema with a 400
    refused = Reply(
        status=400, body={"error": {"message": "response_format json_schema unsupported"}}
    )
    chat_server.script = [refused, completion({"decisions": []}), completion({"decisions": []})]
    chat = provider(chat_server.url)
    # when the provider asks twice
    first = ask(chat)
    ask(chat)
    # then the first ask fell back to json_object, with the schema in the system message
    formats = [r["json"]["response_format"]["type"] for r in chat_server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    system = chat_server.requests[1]["json"]["messages"][0]["content"]
    assert json.dumps(SCHEMA, separators=(",", ":")) in system
    assert first.response_format == "json_object"


def test_a_400_that_is_not_about_the_format_fails(chat_server):
    chat_server.script = [Reply(status=400, body={"error": {"message": "model not found"}})]
    with pytest.raises(ChatFailed, match="HTTP 400"):
        ask(provider(chat_server.url))
    assert len(chat_server.requests) == 1


def test_json_object_is_asked_for_at_once_when_configured(chat_server):
    chat_server.script = [completion({"decisions": []})]
    ask(provider(chat_server.url, response_format="json_object"))
    assert chat_server.requests[0]["json"]["response_format"] == {"type": "json_object"}


def test_a_429_with_retry_after_is_retried_after_it(chat_server):
    # given a server that is rate limited once, saying when to come back
    chat_server.script = [
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0"}),
        completion({"decisions": []}),
    ]
    # when the provider asks with one retry allowed
    answer = ask(provider(chat_server.url, retries=1))
    # then the second attempt answered
    assert len(chat_server.chats) == 2
    assert json.loads(answer.text) == {"decisions": []}


def test_a_429_past_the_retries_fails_naming_the_status_not_the_key(chat_server):
    chat_server.script = [
        Reply(status=429, body={"error": {"message": "quota"}}, headers={"Retry-After": "0"})
    ]
    with pytest.raises(ChatFailed) as failed:
        ask(provider(chat_server.url, api_key="sk-very-secret"))
    assert "429" in str(failed.value)
    assert "sk-very-secret" not in str(failed.value)


def test_a_server_that_does_not_answer_in_time_fails(chat_server):
    chat_server.script = [Reply(body={}, delay_seconds=2.0)]
    with pytest.raises(ChatFailed, match="Timeout"):
        ask(provider(chat_server.url, timeout_seconds=0.3))


def test_a_refused_connection_fails():
    with pytest.raises(ChatFailed, match="Connection"):
        ask(provider("http://127.0.0.1:1"))


@pytest.mark.parametrize(
    "reply",
    [Reply(raw=b"<html>not json</html>"), Reply(body={"object": "chat.completion", "choices": []})],
    ids=["not-json", "no-choices"],
)
def test_a_body_that_is_not_a_completion_fails(chat_server, reply):
    chat_server.script = [reply]
    with pytest.raises(ChatFailed):
        ask(provider(chat_server.url))


def test_a_refusal_and_a_cut_off_answer_are_reported(chat_server):
    chat_server.script = [
        completion(None, refusal="I can't help with that."),
        completion('{"decisions": [', finish_reason="length"),
    ]
    chat = provider(chat_server.url)
    assert ask(chat).refusal == "I can't help with that."
    assert ask(chat).truncated


def test_a_server_without_usage_has_its_tokens_estimated(chat_server):
    chat_server.script = [completion({"decisions": []}, prompt_tokens=None, completion_tokens=None)]
    answer = ask(provider(chat_server.url))
    assert answer.usage_estimated
    assert answer.tokens_in > 0
    assert answer.tokens_out > 0


def test_without_a_model_extraction_is_unavailable_loudly(settings):
    settings.LLM_URL = settings.LLM_MODEL = ""
    assert get_provider() is None
    with pytest.raises(ExtractionUnavailable):
        require_provider()
    health = extraction_health()
    assert health["ok"] is True  # not configured is not broken
    assert health["available"] is False
    assert "KINDMEM_LLM_URL" in health["error"]


def test_health_probes_the_models_list_and_says_when_the_server_is_down(llm):
    health = extraction_health()
    assert health == {
        "ok": True,
        "available": True,
        "model": "fake-llm-1",
        "url": llm.url,
        "error": None,
    }
    assert llm.requests[-1]["path"] == "/v1/models"
    # when the server answers 500 to the probe
    llm.script = [Reply(status=500, body={"error": {"message": "down"}})]
    health = extraction_health()
    assert health["ok"] is False
    assert health["available"] is False
    assert "500" in health["error"]
    assert "sk-test-secret" not in json.dumps(health)
