"""An extraction job that cannot be applied, run as the worker runs it against a scripted chat
server: every bad answer is refused whole, and a model that does not answer, a token cap, an
erasure or a range the watermark has passed moves nothing."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from extraction.models import (
    ConversationExtraction,
    ExtractionDecision,
    ExtractionUsage,
    JobStatus,
)
from facts.models import Revision
from facts.services import fact_create
from tests import factories
from tests.extraction.chat_server import shown
from tests.extraction.conftest import (
    NOTHING,
    Reply,
    add,
    completion,
    requested,
    revisions,
    run_task,
    update,
    watermark,
)
from tests.recall.conftest import conversation_create

pytestmark = pytest.mark.django_db


REFUSALS = {
    "unparseable": lambda shown: completion("this is not json"),
    "no-decisions-list": lambda shown: completion({"memories": []}),
    "undeclared-type": lambda shown: completion({"decisions": [add("secret", "x", [1])]}),
    "cites-outside-range": lambda shown: completion(
        {"decisions": [add("preference", "Prefers email.", [1, 99])]}
    ),
    "cites-nothing": lambda shown: completion({"decisions": [add("preference", "Prefers.", [])]}),
    "cites-the-tool-message": lambda shown: completion(
        {"decisions": [add("preference", "Uses a CRM.", [3])]}
    ),
    "unknown-memory": lambda shown: completion(
        {"decisions": [update("00000000-0000-0000-0000-000000000001", "x", [1])]}
    ),
    "model-refusal": lambda shown: completion(None, refusal="I cannot do that."),
    "truncated": lambda shown: completion('{"decisions": [', finish_reason="length"),
    "too-many-decisions": lambda shown: completion(
        {"decisions": [add("preference", f"Fact {i}.", [1]) for i in range(21)]}
    ),
    "empty-text": lambda shown: completion({"decisions": [add("preference", "  ", [1])]}),
}
CODES = {
    "no-decisions-list": "unparseable",
    "cites-nothing": "unparseable",
    "cites-the-tool-message": "cites-outside-range",
    "empty-text": "invalid-text",
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_bad_answer_is_refused_whole_recorded_and_never_half_applied(
    llm, declared, conversation, case
):
    # given a model whose answer starts with a good decision and then goes wrong
    bad = REFUSALS[case]

    def answer(payload):
        reply = bad(None)
        body = reply.body["choices"][0]["message"]
        content = body["content"]
        if isinstance(content, str) and content.startswith('{"decisions": [{'):
            good = add("preference", "Prefers email to calls.", [1])
            body["content"] = content.replace(
                '{"decisions": [', '{"decisions": [' + __import__("json").dumps(good) + ", ", 1
            )
        return reply

    llm.default = answer
    before = revisions(declared)
    job = run_task(requested(declared))
    # then the job is refused with its code, and nothing was written, not even the good one
    assert job.status == JobStatus.REFUSED
    assert job.error_code == CODES.get(case, case)
    assert revisions(declared) == before
    assert not ExtractionDecision.objects.filter(job=job).exists()
    assert watermark(conversation) == 0
    # and the answer and the tokens are on record, with a failure event in the audit stream
    assert job.tokens_in == 120
    event = AuditEvent.objects.get(
        tenant_id=declared.tenant.id, endpoint="TASK extract_conversation"
    )
    assert (event.outcome, event.error_code) == ("failure", job.error_code)
    # and the range may be extracted again
    llm.default = lambda payload: completion({"decisions": [NOTHING]})
    again = run_task(requested(declared))
    assert again.status == JobStatus.APPLIED
    assert (again.first_sequence, again.last_sequence) == (1, 4)


def test_an_answer_naming_another_persons_memory_is_refused(llm, declared, conversation):
    # given another end user's memory, and another tenant's, whose ids the model names
    theirs = fact_create(
        principal=declared.app.principal,
        type="preference",
        content={"text": "Prefers phone calls."},
        scope={"project_id": declared.project.id, "participant_id": "cust-2"},
    ).revision
    for foreign in [str(theirs.fact_id)]:
        llm.default = lambda payload, f=foreign: completion(
            {"decisions": [update(f, "Prefers email.", [1])]}
        )
        before = revisions(declared)
        job = run_task(requested(declared))
        assert (job.status, job.error_code) == (JobStatus.REFUSED, "unknown-memory")
        assert revisions(declared) == before
        assert Revision.objects.get(fact_id=theirs.fact_id).content == {
            "text": "Prefers phone calls."
        }


def test_an_answer_naming_another_tenants_memory_is_refused(llm, declared, conversation):
    from tests.conftest import world_create

    elsewhere = world_create()
    theirs = fact_create(
        principal=elsewhere.app.principal,
        type="preference",
        content={"text": "Prefers phone calls."},
        scope={"project_id": elsewhere.project.id, "participant_id": "cust-1"},
    ).revision
    llm.default = lambda payload: completion(
        {"decisions": [update(str(theirs.fact_id), "Prefers email.", [1])]}
    )
    job = run_task(requested(declared))
    assert (job.status, job.error_code) == (JobStatus.REFUSED, "unknown-memory")


def test_a_write_refused_midway_rolls_back_the_whole_answer(llm, declared, conversation):
    # given a type whose declared schema keeps its texts short: the second write is refused
    short = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 12}}}
    declared.agent.memory_declarations = [
        *declared.agent.memory_declarations,
        {"type": "tag", "scope": "same-project", "keep_days": 30, "schema": short},
    ]
    declared.agent.save()
    llm.answer(
        lambda shown: [add("note", "Likes tea.", [1]), add("tag", "Likes tea in the morning.", [1])]
    )
    before = revisions(declared)
    job = run_task(requested(declared))
    assert (job.status, job.error_code) == (JobStatus.REFUSED, "invalid-fact")
    assert "Decision 2" in job.error
    assert revisions(declared) == before


def test_a_type_the_conversation_has_no_place_for_is_not_offered_to_the_model(llm, declared):
    # given a conversation with no participant: a participant type has no place in it
    conversation_create(declared, "conv-u", ("user", "Remember that I like tea."))
    job = run_task(requested(declared, "conv-u"))
    [chat] = llm.chats
    offered = sorted(t["type"] for t in shown(chat["json"])["memory_types"])
    assert offered == ["insight", "note"]
    assert chat["json"]["response_format"]["json_schema"]["schema"]["properties"]["decisions"][
        "items"
    ]["properties"]["type"]["enum"] == ["insight", "note", None]
    assert job.status == JobStatus.APPLIED


def test_a_person_under_erasure_gets_nothing_extracted(llm, declared, conversation):
    # given a job queued before an erasure of the person began
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    job = requested(declared)
    factories.hold_create(declared.tenant, "participant", "cust-1")
    before = revisions(declared)
    job = run_task(job)
    # then the model is not even asked, and nothing is written
    assert (job.status, job.error_code) == (JobStatus.REFUSED, "erasure-in-progress")
    assert llm.chats == []
    assert revisions(declared) == before


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500, body={"error": {"message": "boom"}}),
        Reply(status=429, body={"error": {"message": "quota"}}, headers={"Retry-After": "0"}),
        Reply(body={}, delay_seconds=1.5),
    ],
    ids=["5xx", "429", "timeout"],
)
def test_a_model_that_does_not_answer_fails_the_job_and_moves_nothing(
    settings, llm, declared, conversation, reply
):
    settings.LLM_TIMEOUT_SECONDS = 0.5
    llm.script = [reply]
    job = run_task(requested(declared))
    assert (job.status, job.error_code) == (JobStatus.FAILED, "model-failed")
    assert "sk-test-secret" not in job.error
    assert watermark(conversation) == 0
    assert not ExtractionUsage.objects.exists()
    # and the range may be asked again
    assert requested(declared).first_sequence == 1


def test_a_429_is_retried_after_its_retry_after(settings, llm, declared, conversation):
    from extraction.provider import _configured

    settings.LLM_RETRIES = 1
    _configured.cache_clear()
    llm.script = [
        Reply(status=429, body={"error": {"message": "slow"}}, headers={"Retry-After": "0"}),
        completion({"decisions": [add("preference", "Prefers email.", [1])]}),
    ]
    job = run_task(requested(declared))
    assert job.status == JobStatus.APPLIED
    assert len(llm.chats) == 2


def test_a_cap_reached_before_the_call_refuses_the_job(settings, llm, declared, conversation):
    job = requested(declared)
    settings.EXTRACTION_TENANT_DAILY_TOKENS = 100
    ExtractionUsage.objects.create(
        tenant=declared.tenant,
        agent=declared.agent,
        day=__import__("extraction.metering", fromlist=["usage_day"]).usage_day(),
        tokens_in=90,
        tokens_out=10,
    )
    job = run_task(job)
    assert (job.status, job.error_code) == (JobStatus.REFUSED, "extraction-quota")
    assert llm.chats == []


def test_a_job_whose_range_no_longer_follows_the_watermark_writes_nothing(
    llm, declared, conversation
):
    # given a job for messages 1-4, and the watermark moved past 1 meanwhile
    llm.answer(lambda shown: [add("preference", "Prefers email.", [1])])
    job = requested(declared)
    ConversationExtraction.objects.filter(conversation=conversation).update(extracted_through=2)
    before = revisions(declared)
    job = run_task(job)
    assert (job.status, job.error_code) == (JobStatus.REFUSED, "stale")
    assert revisions(declared) == before
    assert watermark(conversation) == 2


def usage_reply(prompt_tokens: Any, completion_tokens: Any) -> Reply:
    """A good answer (one memory) whose server reports these token counts, whatever they are."""
    reply = completion({"decisions": [add("preference", "Prefers email.", [1])]})
    reply.body["usage"] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": 0,
    }
    return reply


@pytest.mark.parametrize(
    ("prompt_tokens", "completion_tokens"),
    # (a count the client library reads as an integer, "120" say, is taken as that integer)
    [(-5, 30), (120, -1), (12.5, 30), ("many", 30), ([1], 30), (10**12, 30), (120, 2**63)],
    ids=["negative-in", "negative-out", "fraction", "text", "list", "absurd", "overflow"],
)
def test_invalid_usage_fails_the_job_metered_at_the_estimate_and_the_next_one_runs(
    llm, declared, conversation, prompt_tokens, completion_tokens
):
    # given a server that answers well but reports token counts that cannot be right
    llm.script = [usage_reply(prompt_tokens, completion_tokens)]
    before = revisions(declared)
    # when the job runs
    job = run_task(requested(declared))
    # then it fails as a model failure, writing nothing, and says why
    assert (job.status, job.error_code) == (JobStatus.FAILED, "model-failed")
    assert "invalid usage" in job.error
    assert revisions(declared) == before
    assert watermark(conversation) == 0
    # and the call is metered at the estimate from its characters, never the server's count
    [chat] = llm.chats
    asked = sum(len(m["content"]) for m in chat["json"]["messages"])
    usage = ExtractionUsage.objects.get(tenant_id=declared.tenant.id)
    assert usage.calls == 1
    assert usage.tokens_in == asked // 4
    assert 0 < usage.tokens_out < 100
    assert (job.tokens_in, job.tokens_out, job.usage_estimated) == (
        usage.tokens_in,
        usage.tokens_out,
        True,
    )
    # and the conversation is not wedged: the next extraction runs and applies
    job = run_task(requested(declared))
    assert (job.status, job.first_sequence) == (JobStatus.APPLIED, 1)
    assert watermark(conversation) == 4
