"""Who wrote a revision and what it says: attribution (PROV wasAttributedTo) from the
credential, the content hash that deduplicates, and the text search indexes."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from facts.models import AttributionKind, Trust
from kindmem.access import Principal, PrincipalKind


@dataclass(frozen=True)
class Attribution:
    kind: str
    id: str
    agent_version: str | None = None
    run_id: uuid.UUID | None = None
    trust: str = Trust.ASSERTED

    @property
    def label(self) -> str:
        """How `invalidated_by`, `verified_by` and `created_by` name the writer."""
        return f"{self.kind}:{self.id}"


def attribution_of(principal: Principal) -> Attribution:
    """An agent for a run, a user for a Kindgi user's key, a service for an app or admin key."""
    if principal.kind == PrincipalKind.RUN:
        run = principal.run
        assert run is not None
        return Attribution(
            kind=AttributionKind.AGENT,
            id=run.agent.agent_id,
            agent_version=run.agent_version,
            run_id=run.id,
            # An agent's write is unverified whatever the route (remember or the facts API).
            trust=Trust.UNVERIFIED,
        )
    if principal.kind == PrincipalKind.USER:
        assert principal.user is not None
        return Attribution(kind=AttributionKind.USER, id=str(principal.user.id))
    assert principal.api_key is not None
    return Attribution(kind=AttributionKind.SERVICE, id=f"{principal.kind}:{principal.api_key.id}")


def content_hash(content: Any, valid_from: datetime | None, valid_until: datetime | None) -> str:
    """The dedup key: the canonical JSON of what a revision says and when it is true."""
    canonical = json.dumps(
        {
            "content": content,
            "valid_from": valid_from.isoformat() if valid_from else None,
            "valid_until": valid_until.isoformat() if valid_until else None,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def search_text_of(content: Any) -> str:
    """The text keyword and semantic search index: a string as is, `text` of an object when it
    has one, otherwise every string in it, in order."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return content["text"]
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                parts.append(str(key))
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif value is not None:
            parts.append(str(value))

    walk(content)
    return " ".join(parts)
