"""The hash chain: its documented encoding, and tamper detection column by column."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runlog import chain
from runlog.chain import GENESIS_HASH
from runlog.models import LogEntry
from runlog.verify import verify_run
from tests.runlog.conftest import log_entry_append, sql, v1_entry_create

TABLE = "runlog_logentry"


def test_entry_hash_follows_the_documented_encoding():
    # given an entry's fields, and the encoding written out by hand from the docstring
    created_at = datetime(2026, 11, 30, 2, 44, 43, 7, tzinfo=UTC)
    cause = uuid.UUID("12345678-1234-5678-1234-567812345678")
    salt = "00" * 15 + "ff"
    payload = {"b": [1, "é"], "a": None}
    by_hand_content = hashlib.sha256(
        bytes.fromhex(salt) + '{"a":null,"b":[1,"é"]}'.encode()
    ).hexdigest()
    by_hand_entry = hashlib.sha256(
        (
            f'["{GENESIS_HASH}",1,"turn","{by_hand_content}",'
            '"12345678-1234-5678-1234-567812345678","2026-11-30T02:44:43.000007Z"]'
        ).encode()
    ).hexdigest()

    # when the chain module computes them
    content = chain.content_hash_v2(payload, salt)
    entry = chain.entry_hash_v2(
        prev_hash=GENESIS_HASH,
        sequence=1,
        kind="turn",
        content_hash=content,
        caused_by=cause,
        created_at=created_at,
    )

    # then they are the same
    assert content == by_hand_content
    assert entry == by_hand_entry
    assert GENESIS_HASH == "0" * 64


def test_an_untouched_chain_verifies(minted, five):
    result = verify_run(minted.run)
    assert result.ok
    assert result.length == 5
    assert result.head == five[-1].entry_hash
    assert result.first_bad_sequence is None


def test_an_empty_log_verifies_with_the_genesis_head(minted):
    result = verify_run(minted.run)
    assert (result.ok, result.length, result.head) == (True, 0, GENESIS_HASH)


def test_numbers_and_unicode_verify_as_postgres_stores_them(minted):
    # given payloads whose numbers jsonb normalizes (1e20, 1.50, -0.0) and non-ASCII text
    log_entry_append(
        minted, "note", big=1e20, f=1.50, z=-0.0, text="日本語 ☃", nested={"b": 1, "a": [2]}
    )

    # then the chain recomputed from what the table returns still verifies
    assert verify_run(minted.run).ok


def test_version_1_entries_verify_and_version_2_entries_follow_them(minted):
    # given two entries as version 1 wrote them, then one appended now
    first = v1_entry_create(minted.run, sequence=1, prev_hash=GENESIS_HASH, payload={"t": "a"})
    v1_entry_create(minted.run, sequence=2, prev_hash=first.entry_hash, payload={"t": "b"})
    third = log_entry_append(minted, "turn", t="c")

    # then the chain verifies across the versions
    assert third.hash_version == 2
    assert third.sequence == 3
    result = verify_run(minted.run)
    assert result.ok
    assert result.length == 3


def test_a_changed_version_1_payload_is_detected(minted):
    first = v1_entry_create(minted.run, sequence=1, prev_hash=GENESIS_HASH, payload={"t": "a"})
    v1_entry_create(minted.run, sequence=2, prev_hash=first.entry_hash, payload={"t": "b"})
    sql(
        f'UPDATE {TABLE} SET payload = \'{{"t": "B"}}\' WHERE run_id = %s AND sequence = 2',
        [minted.run.id],
    )
    assert verify_run(minted.run).first_bad_sequence == 2


def _flip(hex_text: str, at: int) -> str:
    return hex_text[:at] + ("1" if hex_text[at] == "0" else "0") + hex_text[at + 1 :]


@pytest.mark.parametrize(
    ("column", "new_value"),
    [
        ("payload", "jsonb_set(payload, '{args,city}', '\"Zurich\"')"),
        ("kind", "'note'"),
        ("created_at", "'2001-01-01T00:00:00Z'::timestamptz"),
    ],
)
def test_a_changed_column_of_the_second_entry_is_detected_there(minted, five, column, new_value):
    # given a verified chain whose second entry a tamperer changes in SQL
    # (by tenant too, so that on Citus it runs on the row's shard)
    changed = sql(
        f"UPDATE {TABLE} SET {column} = {new_value} WHERE tenant_id = %s AND id = %s",
        [five[1].tenant_id, five[1].id],
    )
    assert changed == 1
    assert not LogEntry.objects.filter(pk=five[1].pk, **{column: getattr(five[1], column)})

    # when the run is verified, then the break is reported at sequence 2
    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence, result.length) == (False, 2, 5)


@pytest.mark.parametrize("column", ["payload_salt", "content_hash", "prev_hash", "entry_hash"])
@pytest.mark.parametrize("at", [0, -1])
def test_a_changed_hex_digit_of_the_second_entry_is_detected_there(minted, five, column, at):
    # given one hex digit (the first or the last) of a hash or the salt changes
    value = getattr(five[1], column)
    at = at % len(value)
    sql(f"UPDATE {TABLE} SET {column} = %s WHERE id = %s", [_flip(value, at), five[1].id])

    # then verification breaks at sequence 2
    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence) == (False, 2)


def test_a_changed_cause_is_detected(minted, five):
    # given the third entry, caused by the second, now claims the first as its cause
    sql(f"UPDATE {TABLE} SET caused_by_log_id = %s WHERE id = %s", [five[0].id, five[2].id])

    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence) == (False, 3)


def test_a_removed_cause_is_detected(minted, five):
    sql(f"UPDATE {TABLE} SET caused_by_log_id = NULL WHERE id = %s", [five[2].id])
    assert verify_run(minted.run).first_bad_sequence == 3


def test_a_cause_pointing_forward_is_detected(minted, five):
    sql(f"UPDATE {TABLE} SET caused_by_log_id = %s WHERE id = %s", [five[4].id, five[3].id])
    assert verify_run(minted.run).first_bad_sequence == 4


def test_swapped_entries_are_detected_at_the_first_of_them(minted, five):
    # given entries 2 and 3 swap places
    sql(f"UPDATE {TABLE} SET sequence = 1000 WHERE id = %s", [five[1].id])
    sql(f"UPDATE {TABLE} SET sequence = 2 WHERE id = %s", [five[2].id])
    sql(f"UPDATE {TABLE} SET sequence = 3 WHERE id = %s", [five[1].id])

    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence) == (False, 2)


def test_a_deleted_entry_is_detected_where_it_was(minted, five):
    assert sql(f"DELETE FROM {TABLE} WHERE id = %s", [five[3].id]) == 1

    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence, result.length) == (False, 4, 4)


def test_a_deleted_entry_renumbered_to_close_the_gap_is_detected(minted, five):
    sql(f"DELETE FROM {TABLE} WHERE id = %s", [five[3].id])
    sql(f"UPDATE {TABLE} SET sequence = 4 WHERE id = %s", [five[4].id])

    assert verify_run(minted.run).first_bad_sequence == 4


def test_an_inserted_entry_is_detected_where_it_was_put(minted, five):
    # given a tamperer inserts a sixth entry linked to the head, with a made-up hash
    sql(
        f"INSERT INTO {TABLE} (id, tenant_id, run_id, sequence, kind, payload, content_hash,"
        " payload_salt, prev_hash, entry_hash, hash_version, created_at)"
        " VALUES (%s, %s, %s, 6, 'turn', '{\"text\": \"I never said that\"}', %s, %s, %s, %s, 2,"
        " now())",
        [
            uuid.uuid4(),
            minted.run.tenant_id,
            minted.run.id,
            "a" * 64,
            "b" * 32,
            five[-1].entry_hash,
            "c" * 64,
        ],
    )

    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence, result.length) == (False, 6, 6)


def test_an_entry_inserted_in_the_middle_is_detected_there(minted, five):
    # given the last two entries move up one place and a forged entry takes the third's place
    for entry in reversed(five[2:]):
        sql(f"UPDATE {TABLE} SET sequence = sequence + 1 WHERE id = %s", [entry.id])
    salt = "ab" * 16
    payload = {"text": "forged"}
    content = chain.content_hash_v2(payload, salt)
    now = datetime.now(UTC)
    forged = chain.entry_hash_v2(
        prev_hash=five[1].entry_hash,
        sequence=3,
        kind="turn",
        content_hash=content,
        caused_by=None,
        created_at=now,
    )
    sql(
        f"INSERT INTO {TABLE} (id, tenant_id, run_id, sequence, kind, payload, content_hash,"
        " payload_salt, prev_hash, entry_hash, hash_version, created_at)"
        " VALUES (%s, %s, %s, 3, 'turn', %s, %s, %s, %s, %s, 2, %s)",
        [
            uuid.uuid4(),
            minted.run.tenant_id,
            minted.run.id,
            json.dumps(payload),
            content,
            salt,
            "f" * 64,  # prev_hash must differ from the old third's: (run, prev_hash) is unique
            forged,
            now,
        ],
    )
    assert verify_run(minted.run).first_bad_sequence == 3


def test_the_database_refuses_a_forked_chain(minted, five):
    # given a second entry naming the same predecessor as the third
    with pytest.raises(IntegrityError, match="log_no_fork_per_run"), transaction.atomic():
        sql(
            f"INSERT INTO {TABLE} (id, tenant_id, run_id, sequence, kind, payload, content_hash,"
            " payload_salt, prev_hash, entry_hash, hash_version, created_at)"
            " VALUES (%s, %s, %s, 99, 'turn', '{}', %s, %s, %s, %s, 2, now())",
            [
                uuid.uuid4(),
                minted.run.tenant_id,
                minted.run.id,
                "a" * 64,
                "b" * 32,
                five[1].entry_hash,
                "c" * 64,
            ],
        )


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("hash_version = 3", "log_hash_version_known"),
        ("hash_version = 1", "log_salt_matches_version"),  # a v1 entry has no salt
        ("kind = 'telepathy'", "log_kind_known"),
        # only with payload_erased_at, and then without the salt
        ("payload = NULL", "log_payload_present_unless_erased"),
        ("payload_salt = NULL", "log_salt_matches_version"),
    ],
)
def test_the_database_refuses_impossible_rows(minted, five, assignment, constraint):
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        sql(f"UPDATE {TABLE} SET {assignment} WHERE id = %s", [five[1].id])


def test_downgrading_an_erased_entry_to_version_1_is_detected(minted, five):
    # given the log is erased, and a tamperer relabels the fourth entry as version 1 (whose
    # erased entries cannot be recomputed) to hide a change to its kind
    from runlog.services import log_payloads_erase

    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    sql(f"UPDATE {TABLE} SET hash_version = 1, kind = 'error' WHERE id = %s", [five[3].id])

    result = verify_run(minted.run)
    assert (result.ok, result.first_bad_sequence) == (False, 4)


TAMPERS = [
    "payload",
    "payload_salt",
    "kind",
    "created_at",
    "content_hash",
    "prev_hash",
    "entry_hash",
    "caused_by",
    "swap",
    "delete",
]


def _tamper(how: str, entries: list[LogEntry], position: int, at: int) -> int:
    """Apply one tampering to the entry at `position` (1-based); return where it must be
    detected."""
    entry = entries[position - 1]
    where = "WHERE id = %s"
    if how == "payload":
        sql(f"UPDATE {TABLE} SET payload = payload || '{{\"x\": 1}}' {where}", [entry.id])
    elif how == "kind":
        new_kind = "error" if entry.kind != "error" else "note"
        sql(f"UPDATE {TABLE} SET kind = %s {where}", [new_kind, entry.id])
    elif how == "created_at":
        # a value, not `created_at - interval ...`: Citus computes no UPDATE from a column
        # with a STABLE function (timestamptz arithmetic)
        earlier = entry.created_at - timedelta(microseconds=1)
        sql(f"UPDATE {TABLE} SET created_at = %s {where}", [earlier, entry.id])
    elif how in {"payload_salt", "content_hash", "prev_hash", "entry_hash"}:
        value = getattr(entry, how)
        sql(f"UPDATE {TABLE} SET {how} = %s {where}", [_flip(value, at % len(value)), entry.id])
    elif how == "caused_by":
        # none -> a cause (the first entry, or for the first a later one); a cause -> none
        if entry.caused_by_id is not None:
            cause = None
        else:
            cause = entries[0].id if position > 1 else entries[1].id
        sql(f"UPDATE {TABLE} SET caused_by_log_id = %s {where}", [cause, entry.id])
    elif how == "swap":
        other = position + 1 if position < len(entries) else position - 1
        sql(f"UPDATE {TABLE} SET sequence = 1000 {where}", [entry.id])
        sql(f"UPDATE {TABLE} SET sequence = %s {where}", [position, entries[other - 1].id])
        sql(f"UPDATE {TABLE} SET sequence = %s {where}", [other, entry.id])
        return min(position, other)
    elif how == "delete":
        # (the newest entry's deletion is only visible against a kept head; see README)
        position = min(position, len(entries) - 1)
        entry = entries[position - 1]
        sql(f"UPDATE {TABLE} SET caused_by_log_id = NULL WHERE caused_by_log_id = %s", [entry.id])
        sql(f"DELETE FROM {TABLE} {where}", [entry.id])
    return position


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    how=st.sampled_from(TAMPERS),
    position=st.integers(min_value=1, max_value=5),
    at=st.integers(min_value=0, max_value=63),
)
def test_any_tampering_of_any_entry_is_detected_exactly_there(minted, five, how, position, at):
    # given an intact chain of five entries, and one generated tampering (undone afterwards)
    with transaction.atomic():
        expected = _tamper(how, five, position, at)

        # when it is verified
        result = verify_run(minted.run)
        transaction.set_rollback(True)

    # then it breaks exactly where the tampering is
    assert not result.ok
    assert result.first_bad_sequence == expected
    assert verify_run(minted.run).ok
