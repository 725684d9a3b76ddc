"""The run log's routes, through the real client and URL."""

from __future__ import annotations

import uuid

import pytest

from api.parsers import MAX_JSON_DEPTH
from runlog.chain import GENESIS_HASH
from runlog.models import LogEntry
from runlog.services import log_payloads_erase
from tests import factories
from tests.conftest import TENANT_QUERIES
from tests.runlog.conftest import log_entry_append, sql
from tests.stacks import STACKS, under


def log_url(run_id: object) -> str:
    return f"/v1/runs/{run_id}/log"


def test_a_run_appends_to_its_own_log(api, minted):
    # when the run's token appends a turn
    response = api.post(
        log_url(minted.run.id),
        {"kind": "turn", "payload": {"role": "user", "text": "hi"}},
        format="json",
        **minted.headers,
    )

    # then it is entry 1, linked to genesis, with its hashes
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["sequence"] == 1
    assert body["prev_hash"] == GENESIS_HASH
    assert body["hash_version"] == 2
    assert body["payload"] == {"role": "user", "text": "hi"}
    assert len(body["entry_hash"]) == 64


def test_an_append_can_name_its_cause(api, minted):
    call = log_entry_append(minted, "tool-call", tool="weather")
    response = api.post(
        log_url(minted.run.id),
        {"kind": "tool-result", "payload": {"t": 7}, "caused_by_log_id": str(call.id)},
        format="json",
        **minted.headers,
    )
    assert response.status_code == 201
    assert response.json()["caused_by_log_id"] == str(call.id)


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "telepathy", "payload": {}},
        {"kind": "turn", "payload": [1, 2]},
        {"kind": "turn", "payload": "text"},
        {"kind": "turn"},
        {"payload": {}},
        {"kind": "turn", "payload": {"t": "\x00"}},
        {"kind": "turn", "payload": {}, "caused_by_log_id": "not-a-uuid"},
        {"kind": "turn", "payload": {}, "caused_by_log_id": str(uuid.UUID(int=1))},
    ],
)
def test_bad_appends_are_refused_with_a_validation_error_and_write_nothing(api, minted, body):
    response = api.post(log_url(minted.run.id), body, format="json", **minted.headers)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("stack", STACKS)
def test_a_payload_nested_too_deep_is_refused(api, minted, stack):
    # given 100 levels: within what every JSON body may nest, beyond the run log's limit of 32
    body = '{"kind": "turn", "payload": {"a": ' + "[" * 100 + "]" * 100 + "}}"
    response = under(
        stack,
        lambda: api.post(
            log_url(minted.run.id), body, content_type="application/json", **minted.headers
        ),
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"
    assert "deeper than 32" in str(response.json()["details"])
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("levels", [900, 100_000])
def test_a_body_nested_beyond_what_json_bodies_may_is_one_400_at_any_stack(
    api, minted, stack, levels
):
    # given a body deeper than the parser takes (api/parsers.py): refused before it is
    # parsed, so the answer is the same whatever the stack depth it arrives at
    body = '{"kind": "turn", "payload": {"a": ' + "[" * levels + "]" * levels + "}}"
    response = under(
        stack,
        lambda: api.post(
            log_url(minted.run.id), body, content_type="application/json", **minted.headers
        ),
    )
    assert response.status_code == 400
    assert response.json() == {
        "code": "validation-error",
        "message": f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.",
        "details": None,
    }
    assert not LogEntry.objects.exists()


def test_a_lone_surrogate_is_refused(api, minted):
    body = '{"kind": "turn", "payload": {"t": "\\ud800"}}'
    response = api.post(
        log_url(minted.run.id), body, content_type="application/json", **minted.headers
    )
    assert response.status_code == 400
    assert not LogEntry.objects.exists()


def test_malformed_json_is_refused_with_a_validation_error(api, minted):
    response = api.post(
        log_url(minted.run.id), "{not json", content_type="application/json", **minted.headers
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"


def test_an_oversized_payload_is_refused(api, minted, settings):
    settings.RUNLOG_MAX_PAYLOAD_BYTES = 1000
    response = api.post(
        log_url(minted.run.id),
        {"kind": "turn", "payload": {"t": "x" * 2000}},
        format="json",
        **minted.headers,
    )
    assert response.status_code == 400
    assert response.json()["details"]["limit_bytes"] == 1000


def test_an_append_during_an_erasure_is_a_409(api, world, minted):

    factories.hold_create(world.tenant, "participant", "participant-1")
    response = api.post(
        log_url(minted.run.id), {"kind": "turn", "payload": {}}, format="json", **minted.headers
    )
    assert response.status_code == 409
    assert response.json()["code"] == "erasure-in-progress"


def test_a_run_may_not_append_to_another_run(api, world, minted):
    # given another run of the same participant and thread (which it may read) and one of
    # another participant and thread (which it may not)
    sibling = factories.run_create(world.app, world.project)
    stranger = factories.run_create(world.app, world.project, participant_id="p-9", thread_id="t9")
    body = {"kind": "turn", "payload": {}}

    readable = api.post(log_url(sibling.run.id), body, format="json", **minted.headers)
    unreadable = api.post(log_url(stranger.run.id), body, format="json", **minted.headers)

    assert readable.status_code == 403
    assert unreadable.status_code == 404
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("credential", ["app", "admin"])
def test_api_keys_append_to_runs_they_may_read(api, world, minted, credential):
    keyed = getattr(world, credential)
    response = api.post(
        log_url(minted.run.id), {"kind": "note", "payload": {}}, format="json", **keyed.headers
    )
    assert response.status_code == 201


def test_a_users_key_cannot_append_to_an_end_users_run_it_cannot_read(api, world, minted):
    # given a run for an app's end user in a project the Kindgi user is a member of
    response = api.post(
        log_url(minted.run.id),
        {"kind": "note", "payload": {}},
        format="json",
        **world.user_key.headers,
    )
    # then the user's key neither reads nor writes it
    assert response.status_code == 404
    assert not LogEntry.objects.exists()


def test_an_app_of_another_project_cannot_append(api, world, minted):
    elsewhere = factories.project_create(world.tenant)
    other_app = factories.app_key_create(world.tenant, [elsewhere])
    response = api.post(
        log_url(minted.run.id), {"kind": "note", "payload": {}}, format="json", **other_app.headers
    )
    assert response.status_code == 404


def test_another_tenant_sees_no_run(api, other_world, minted, five):
    for url in (log_url(minted.run.id), log_url(minted.run.id) + "/verify"):
        response = api.get(url, **other_world.admin.headers)
        assert response.status_code == 404
        assert response.json()["code"] == "not-found"


def test_an_unknown_run_is_a_404(api, world):
    assert api.get(log_url(uuid.uuid4()), **world.admin.headers).status_code == 404


def test_the_log_pages_by_sequence(api, world, minted):
    for n in range(7):
        log_entry_append(minted, "turn", n=n)

    first = api.get(log_url(minted.run.id), {"limit": 3}, **minted.headers).json()
    second = api.get(
        log_url(minted.run.id),
        {"limit": 3, "after_sequence": first["next_after_sequence"]},
        **minted.headers,
    ).json()
    last = api.get(
        log_url(minted.run.id), {"limit": 3, "after_sequence": 6}, **minted.headers
    ).json()

    assert [e["sequence"] for e in first["entries"]] == [1, 2, 3]
    assert first["next_after_sequence"] == 3
    assert [e["sequence"] for e in second["entries"]] == [4, 5, 6]
    assert [e["sequence"] for e in last["entries"]] == [7]
    assert last["next_after_sequence"] is None


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1001}, {"after_sequence": -1}])
def test_bad_paging_is_a_validation_error(api, minted, params):
    response = api.get(log_url(minted.run.id), params, **minted.headers)
    assert response.status_code == 400
    assert response.json()["code"] == "validation-error"


def test_listing_takes_the_same_queries_however_long_the_page(
    api, world, minted, django_assert_num_queries
):
    log_entry_append(minted)
    # the run token, the guarded run, the guarded page; entering and leaving its tenant
    with django_assert_num_queries(3 + TENANT_QUERIES):
        short = api.get(log_url(minted.run.id), **minted.headers)
    for n in range(20):
        log_entry_append(minted, "turn", n=n)
    with django_assert_num_queries(3 + TENANT_QUERIES):
        long = api.get(log_url(minted.run.id), **minted.headers)
    assert (len(short.json()["entries"]), len(long.json()["entries"])) == (1, 21)


def test_a_user_reads_no_participants_log_but_an_app_does(api, world, minted, five):
    assert api.get(log_url(minted.run.id), **world.user_key.headers).status_code == 404
    assert api.get(log_url(minted.run.id), **world.app.headers).status_code == 200


def test_a_user_reads_the_log_of_its_own_run(api, world):
    own = factories.run_create(world.app, world.project, participant_id=None, user=world.user)
    log_entry_append(own)
    response = api.get(log_url(own.run.id), **world.user_key.headers)
    assert response.status_code == 200
    assert len(response.json()["entries"]) == 1


def test_verify_reports_ok_and_the_head(api, minted, five):
    response = api.get(log_url(minted.run.id) + "/verify", **minted.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["length"] == 5
    assert body["head"] == five[-1].entry_hash
    assert body["first_bad_sequence"] is None


def test_verify_reports_where_a_tampered_log_breaks(api, minted, five):
    sql("UPDATE runlog_logentry SET kind = 'error' WHERE id = %s", [five[2].id])
    body = api.get(log_url(minted.run.id) + "/verify", **minted.headers).json()
    assert (body["ok"], body["first_bad_sequence"]) == (False, 3)


def test_an_erased_log_reads_without_payloads_and_still_verifies(api, minted, five):
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    entries = api.get(log_url(minted.run.id), **minted.headers).json()["entries"]
    assert all(e["payload"] is None and e["payload_erased_at"] for e in entries)
    assert api.get(log_url(minted.run.id) + "/verify", **minted.headers).json()["ok"] is True


def test_agent_text_comes_back_as_data(api, minted):
    log_entry_append(minted, "turn", text="<script>alert(1)</script>")
    entries = api.get(log_url(minted.run.id), **minted.headers).json()["entries"]
    assert entries[0]["payload"]["text"] == "<script>alert(1)</script>"
