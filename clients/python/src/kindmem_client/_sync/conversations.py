"""Conversations' messages, and recall of earlier ones.

Written from `kindmem_client/_async/conversations.py` by `clients/python/scripts/unasync.py`:
edit that module and run the script, not this file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from kindmem_client._base import Id, body, query_params, segment
from kindmem_client._sync.core import Core
from kindmem_client.types import (
    Append,
    Extract,
    ExtractionState,
    MessageDelete,
    MessageInput,
    MessageList,
    MessagesClear,
    Recall,
    SelectionInput,
)


class Conversations(Core):
    """`/v1/conversations/{id}/messages`, `/v1/conversations/{id}/extract` and `/v1/recall`."""

    def append_messages(
        self,
        conversation_id: str,
        messages: Sequence[MessageInput],
        *,
        agent_id: str | None = None,
        project_id: Id | None = None,
        participant_id: str | None = None,
        user_id: Id | None = None,
        segments: Sequence[str] | None = None,
    ) -> Append:
        """Append messages (`{"role", "text"}`, at most 100) to a conversation; an app key
        names `agent_id` and `project_id` (and the person) when it creates the conversation."""
        payload = body(
            messages=messages,
            agent_id=agent_id,
            project_id=project_id,
            participant_id=participant_id,
            user_id=user_id,
            segments=segments,
        )
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        return cast(Append, self._json("POST", path, json=payload))

    def list_messages(
        self,
        conversation_id: str,
        *,
        before_sequence: int | None = None,
        limit: int | None = None,
    ) -> MessageList:
        """The newest `limit` messages of a conversation (before `before_sequence`), oldest
        first, with their `data`; `next_before_sequence` pages to older ones."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        params = query_params(before_sequence=before_sequence, limit=limit)
        return cast(MessageList, self._json("GET", path, params=params))

    def delete_message(self, conversation_id: str, sequence: int) -> MessageDelete:
        """Delete one message of a conversation; the answer carries it."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages/{int(sequence)}"
        return cast(MessageDelete, self._json("DELETE", path))

    def clear_messages(self, conversation_id: str) -> MessagesClear:
        """Delete every message of a conversation (it stays, its sequences go on)."""
        path = f"/v1/conversations/{segment(conversation_id)}/messages"
        return cast(MessagesClear, self._json("DELETE", path))

    def extract(self, conversation_id: str) -> Extract:
        """Extract memories from the conversation's messages since its watermark, in the
        background, by the operator's chat model: `outcome` `queued` (the `job`),
        `already-queued` (the one before) or `up-to-date`. Its decisions are written as the
        conversation's agent under remember's review rules; an update of a memory is a proposed
        supersede for a reviewer. `ExtractionUnavailable` without a chat model,
        `ExtractionQuota` past a cap."""
        path = f"/v1/conversations/{segment(conversation_id)}/extract"
        return cast(Extract, self._json("POST", path, json={}))

    def extractions(self, conversation_id: str) -> ExtractionState:
        """The conversation's watermark and its newest extractions, each with its decisions."""
        path = f"/v1/conversations/{segment(conversation_id)}/extract"
        return cast(ExtractionState, self._json("GET", path))

    def recall(
        self,
        *,
        selections: Sequence[SelectionInput],
        mode: Literal["list", "keyword", "semantic"],
        query: str | None = None,
        roles: Sequence[Literal["user", "agent"]] | None = None,
        top_k: int | None = None,
    ) -> Recall:
        """Recall messages of earlier conversations the credential may read."""
        payload = body(selections=selections, mode=mode, query=query, roles=roles, top_k=top_k)
        return cast(Recall, self._json("POST", "/v1/recall", json=payload))
