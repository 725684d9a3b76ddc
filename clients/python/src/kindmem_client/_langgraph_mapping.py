"""How `KindmemStore` (kindmem_client/langgraph.py) maps LangGraph's items onto kindmem facts:
a namespace and key as a fact's slot key, its prefixes as tags, LangGraph's rules for labels,
a store's scope, and a fact read back as an `Item` (the table is langgraph.py's docstring)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import InvalidNamespaceError, Item, SearchItem

from kindmem_client.types import Fact

MAX_SLOT_CHARS = 200  # kindmem's limit on a fact's key
MAX_TAG_CHARS = 100  # and on a tag

Scope = Mapping[str, Any]


def _escape(label: str) -> str:
    return label.replace("%", "%25").replace("/", "%2F")


def _unescape(part: str) -> str:
    return part.replace("%2F", "/").replace("%2f", "/").replace("%25", "%")


def _joined(labels: Iterable[str]) -> str:
    return "/".join(_escape(label) for label in labels)


def slot_key(namespace: tuple[str, ...], key: str) -> str:
    """The kindmem slot key of a LangGraph item: labels and key joined by ``/``, escaped."""
    slot = _joined((*namespace, key))
    if len(slot) > MAX_SLOT_CHARS:
        raise ValueError(
            f"namespace and key make a slot key of {len(slot)} characters; kindmem's slot keys "
            f"hold at most {MAX_SLOT_CHARS}: {slot[:60]}..."
        )
    return slot


def slot_parse(slot: str) -> tuple[tuple[str, ...], str] | None:
    """``(namespace, key)`` of a slot key `slot_key` wrote, or None for any other key."""
    parts = [_unescape(part) for part in slot.split("/")]
    if len(parts) < 2 or not all(parts[:-1]):
        return None
    return tuple(parts[:-1]), parts[-1]


def prefix_tag(prefix: tuple[str, ...]) -> str:
    """The tag every item under `prefix` carries."""
    tag = "ns:" + _joined(prefix)
    if len(tag) <= MAX_TAG_CHARS:
        return tag
    return "ns#" + hashlib.sha256(_joined(prefix).encode()).hexdigest()


def namespace_tags(namespace: tuple[str, ...]) -> list[str]:
    """The tags of an item in `namespace`: one per prefix, the namespace itself included."""
    return [prefix_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]


def check_labels(namespace: tuple[str, ...], *, writing: bool = False) -> None:
    """LangGraph's rules for labels, for ops given to `batch` directly (its methods check them
    before batching): strings, not empty, no period; a written namespace is not empty and its
    root is not ``langgraph``."""
    if writing and not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if writing and namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph": {namespace}')
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels are non-empty strings "
                "without periods."
            )


def normal_scope(scope: Scope) -> dict[str, str]:
    return {k: str(v) for k, v in scope.items() if v is not None}


def scope_matches(fact: Fact, wanted: dict[str, str]) -> bool:
    """Whether `fact` lives exactly in `wanted`; kindmem fills a project's org in itself."""
    have = dict(fact["scope"])
    if "org_id" not in wanted and "project_id" in wanted:
        have.pop("org_id", None)
    return have == wanted


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def run_scope(me: Mapping[str, Any]) -> dict[str, str]:
    """A run's own scope: its project and its end user, else its user, else its thread."""
    readers = me["readers"]
    if me["kind"] != "run" or not readers["project_ids"]:
        raise ValueError(
            "KindmemStore(scope=...) is required with an API key: name the project (and the "
            "end user) its items belong to; only a run token has a scope of its own"
        )
    scope = {"project_id": readers["project_ids"][0]}
    for key, ids in (
        ("participant_id", readers["participant_ids"]),
        ("user_id", readers["user_ids"]),
        ("thread_id", readers["thread_ids"]),
    ):
        if ids:
            return {**scope, key: ids[0]}
    raise ValueError(
        "this run names no end user, user or conversation: a memory of its project alone would "
        "wait for review; give KindmemStore(scope=...)"
    )


def fact_item(fact: Fact, namespace: tuple[str, ...], key: str) -> Item:
    return Item(
        value=fact["content"],
        key=key,
        namespace=namespace,
        created_at=_when(fact["created_at"]),
        updated_at=_when(fact["updated_at"]),
    )


def fact_search_item(
    fact: Fact, namespace: tuple[str, ...], key: str, score: float | None
) -> SearchItem:
    return SearchItem(
        namespace=namespace,
        key=key,
        value=fact["content"],
        created_at=_when(fact["created_at"]),
        updated_at=_when(fact["updated_at"]),
        score=score,
    )
