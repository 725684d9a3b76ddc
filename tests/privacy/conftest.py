"""Fixtures for the privacy tests: planting a person's data through the real services, and
the residue scan over every text-like column of the database."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from facts.links import link_create
from facts.scopes import SubjectInput
from facts.services import fact_create, fact_supersede
from recall.services import ConversationStart, NewMessage, conversation_append
from runlog.services import log_append
from tests import factories

# Column types that can hold an id or a text: every one of them is scanned.
SCANNED_TYPES = ("text", "character varying", "character", "jsonb", "json", "uuid", "tsvector")


@dataclass
class Planted:
    participant_id: str
    marker: str
    thread_id: str
    runs: list[Any] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)
    conversation_ids: list[str] = field(default_factory=list)


def plant_person(
    world: Any,
    participant_id: str,
    marker: str,
    *,
    facts: int = 2,
    messages: int = 3,
    entries: int = 2,
    runs: int = 1,
) -> Planted:
    """Facts (each with two revisions, one more about the person by subject only), links,
    a conversation with messages, and runs with log entries, each text carrying `marker`."""
    thread = f"thread-{uuid.uuid4().hex[:12]}"  # neutral: runs keep their thread id
    planted = Planted(participant_id, marker, thread)
    app = world.app.principal
    scope = {"project_id": str(world.project.id), "participant_id": participant_id}
    for i in range(facts):
        revision = fact_create(
            principal=app,
            type="preference",
            content={"text": f"{marker} prefers tea number {i}"},
            scope=scope,
            tags=[f"tag-{marker}"],
        )
        fact_supersede(
            principal=app,
            fact_id=revision.revision.fact_id,
            content={"text": f"{marker} prefers coffee number {i}"},
        )
        planted.fact_ids.append(str(revision.revision.fact_id))
    by_subject = fact_create(
        principal=app,
        type="note",
        content={"text": f"the project met {marker}"},
        scope={"project_id": str(world.project.id)},
        subjects=[SubjectInput(kind="participant", id=participant_id)],
    )
    planted.fact_ids.append(str(by_subject.revision.fact_id))
    if len(planted.fact_ids) > 1:
        link_create(
            principal=app,
            source_id=planted.fact_ids[0],
            target_id=planted.fact_ids[-1],
            type="about",
        )
    for r in range(runs):
        minted = factories.run_create(
            world.app, world.project, participant_id=participant_id, thread_id=thread
        )
        planted.runs.append(minted.run)
        if r == 0 and messages:
            conversation, _ = conversation_append(
                principal=minted.principal,
                conversation_id=thread,
                messages=[
                    NewMessage(role="user" if i % 2 == 0 else "agent", text=f"{marker} says {i}")
                    for i in range(messages)
                ],
                start=ConversationStart(),
            )
            planted.conversation_ids.append(str(conversation.id))
        for i in range(entries):
            log_append(
                principal=minted.principal,
                run=minted.run,
                kind="note",
                payload={"text": f"{marker} log entry {i}"},
            )
    return planted


def residue_scan(needles: list[str]) -> list[tuple[str, str, int]]:
    """Every (table, column, rows) of the public schema whose text form contains a needle.

    The columns come from the catalog, not from the models: text, varchar, char, json, jsonb,
    uuid, tsvector and arrays of these, in every table (Django's, the apps', the audit's).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.table_name, c.column_name
            FROM information_schema.columns c
            JOIN information_schema.tables t
              ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
              AND (c.data_type = ANY(%s)
                   OR (c.data_type = 'ARRAY'
                       AND ltrim(c.udt_name, '_') IN
                           ('text', 'varchar', 'bpchar', 'jsonb', 'json', 'uuid')))
            ORDER BY 1, 2
            """,
            [list(SCANNED_TYPES)],
        )
        columns = cursor.fetchall()
        found = []
        for table, column in columns:
            conditions = " OR ".join(
                f'strpos(lower("{column}"::text), lower(%s)) > 0' for _ in needles
            )
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE {conditions}', needles)
            count = cursor.fetchone()[0]
            if count:
                found.append((table, column, count))
    assert columns, "the scan found no columns to look in"
    return found
