"""Appending to and erasing the run log through its services."""

from __future__ import annotations

import uuid

import pytest
from django.test import override_settings

from api.errors import ErasureInProgress, ValidationFailed
from runlog import chain
from runlog.chain import GENESIS_HASH
from runlog.models import LogEntry
from runlog.services import log_append, log_payloads_erase
from runlog.verify import verify_run
from tests import factories
from tests.runlog.conftest import log_entry_append


def test_append_numbers_entries_from_one_and_links_each_to_the_previous(minted):
    # when three entries are appended
    entries = [log_entry_append(minted, "turn", n=i) for i in range(3)]

    # then they are 1, 2, 3, the first links to genesis and each next to the one before
    assert [e.sequence for e in entries] == [1, 2, 3]
    assert entries[0].prev_hash == GENESIS_HASH
    assert entries[1].prev_hash == entries[0].entry_hash
    assert entries[2].prev_hash == entries[1].entry_hash
    assert all(e.hash_version == 2 and len(e.payload_salt) == 32 for e in entries)


def test_each_entry_gets_a_fresh_salt_so_equal_payloads_hash_differently(minted):
    first = log_entry_append(minted, "turn", text="same")
    second = log_entry_append(minted, "turn", text="same")
    assert first.payload_salt != second.payload_salt
    assert first.content_hash != second.content_hash


def test_the_stored_row_recomputes_to_its_hashes(minted):
    entry = log_entry_append(minted, "tool-call", tool="search", args={"q": "Zürich"})
    stored = LogEntry.objects.get(pk=entry.pk)
    assert chain.content_hash_v2(stored.payload, stored.payload_salt) == stored.content_hash


def test_runs_have_separate_chains(world, minted):
    other = factories.run_create(
        world.app, world.project, participant_id="p-2", thread_id="thread-2"
    )
    log_entry_append(minted)
    log_entry_append(minted)
    entry = log_entry_append(other)
    assert (entry.sequence, entry.prev_hash) == (1, GENESIS_HASH)


def _nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("telepathy", {"a": 1}),
        ("turn", ["not", "an", "object"]),
        ("turn", "text"),
        ("turn", None),
        ("turn", {"text": "nul \x00 inside"}),
        ("turn", {"x": float("nan")}),
        ("turn", {"x": float("inf")}),
        ("turn", {"nul\x00key": 1}),
        ("turn", {"lone": "\ud800"}),
        ("turn", {1: "int key"}),
        ("turn", {"when": object()}),
        ("turn", {"deep": _nested(32)}),  # 33 levels
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(minted, kind, payload):
    with pytest.raises(ValidationFailed):
        log_append(principal=minted.principal, run=minted.run, kind=kind, payload=payload)
    assert not LogEntry.objects.exists()


def test_a_payload_32_levels_deep_is_accepted(minted):
    # the object is level 1, so 31 levels of lists below it make 32
    log_entry_append(minted, "note", deep=_nested(31))
    assert verify_run(minted.run).ok


@override_settings(RUNLOG_MAX_PAYLOAD_BYTES=100)
def test_a_payload_over_the_size_limit_is_refused(minted):
    # given a limit of 100 bytes of canonical JSON
    fits = {"t": "x" * 90}  # {"t":"xxx..."} = 98 bytes
    too_big = {"t": "x" * 93}

    log_entry_append(minted, "turn", **fits)
    with pytest.raises(ValidationFailed) as refused:
        log_entry_append(minted, "turn", **too_big)

    assert refused.value.details["limit_bytes"] == 100
    assert LogEntry.objects.count() == 1


def test_the_cause_must_be_an_entry_of_the_same_run(world, minted):
    other = factories.run_create(
        world.app, world.project, participant_id="p-2", thread_id="thread-2"
    )
    foreign = log_entry_append(other)
    for cause in (foreign.id, uuid.uuid4()):
        with pytest.raises(ValidationFailed):
            log_append(
                principal=minted.principal,
                run=minted.run,
                kind="tool-result",
                payload={},
                caused_by_log_id=cause,
            )
    assert not LogEntry.objects.filter(run=minted.run).exists()


@pytest.mark.parametrize(
    ("subject_kind", "subject_id"),
    [("participant", "participant-1"), ("conversation", "thread-1"), ("user", None)],
)
def test_append_is_refused_while_an_erasure_holds_the_runs_person_or_thread(
    world, subject_kind, subject_id
):
    # given a run for participant-1 and thread-1 (or one of the world's user), and a hold on
    # its person or its thread
    if subject_kind == "user":
        minted = factories.run_create(world.app, world.project, user=world.user)
    else:
        minted = factories.run_create(world.app, world.project)
    factories.hold_create(world.tenant, subject_kind, subject_id or str(world.user.id))

    # when the agent appends, then it is refused and nothing is written
    with pytest.raises(ErasureInProgress):
        log_entry_append(minted)
    assert not LogEntry.objects.exists()


def test_erasure_clears_payloads_and_salts_and_the_chain_still_verifies(minted, five):
    # given a verified chain
    head = verify_run(minted.run).head

    # when its payloads are erased
    cleared = log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])

    # then every payload and salt is gone, the hashes stay, and the chain verifies to the same head
    assert cleared == 5
    rows = list(LogEntry.objects.filter(run=minted.run).order_by("sequence"))
    assert all(r.payload is None and r.payload_salt is None for r in rows)
    assert all(r.payload_erased_at is not None for r in rows)
    assert [r.content_hash for r in rows] == [e.content_hash for e in five]
    assert LogEntry.objects.filter(run=minted.run, payload__isnull=True).count() == 5
    result = verify_run(minted.run)
    assert (result.ok, result.length, result.head) == (True, 5, head)


def test_erased_content_cannot_be_confirmed_by_guessing(minted, five):
    # given the first entry's payload, which a guesser knows exactly
    known = five[0].payload
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    erased = LogEntry.objects.get(pk=five[0].pk)

    # then neither the unsalted hash nor any guessed salt links the payload to the content hash
    assert erased.payload_salt is None
    assert chain.content_hash_v1(known) != erased.content_hash
    for guess in ("00" * 16, "ff" * 16, chain.new_salt()):
        assert chain.content_hash_v2(known, guess) != erased.content_hash


def test_erasure_is_idempotent_and_keeps_the_first_erasure_time(minted, five):
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    first = LogEntry.objects.get(pk=five[0].pk).payload_erased_at

    again = log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])

    assert again == 0
    assert LogEntry.objects.get(pk=five[0].pk).payload_erased_at == first
    assert verify_run(minted.run).ok


def test_erasure_touches_only_the_named_runs_of_the_named_tenant(world, other_world, minted, five):
    other = factories.run_create(
        world.app, world.project, participant_id="p-2", thread_id="thread-2"
    )
    kept = log_entry_append(other)
    # the right run id under the wrong tenant clears nothing
    assert log_payloads_erase(tenant_id=other_world.tenant.id, run_ids=[minted.run.id]) == 0

    log_payloads_erase(tenant_id=world.tenant.id, run_ids=[minted.run.id])

    assert LogEntry.objects.get(pk=kept.pk).payload == {"n": 1}


def test_appending_after_an_erasure_continues_the_chain(minted, five):
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    entry = log_entry_append(minted, "turn", text="later")
    assert (entry.sequence, entry.prev_hash) == (6, five[-1].entry_hash)
    assert verify_run(minted.run).ok


def test_an_erased_version_1_entry_keeps_its_links_checked(minted):
    # given a version 1 entry, then a version 2 entry, both erased
    from tests.runlog.conftest import v1_entry_create

    v1_entry_create(minted.run, sequence=1, prev_hash=GENESIS_HASH, payload={"t": "a"})
    log_entry_append(minted, "turn", t="b")
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])

    # then the chain verifies, naming the entry whose hash could not be recomputed
    result = verify_run(minted.run)
    assert result.ok
    assert result.unverifiable_sequences == [1]
