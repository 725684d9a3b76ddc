"""LangGraph's store filters, read as its own stores (InMemoryStore, PostgresStore) read them:
a `SearchOp.filter` over an item's value, a `MatchCondition` over a namespace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import MatchCondition


def _compare(value: Any, wanted: Any) -> bool:
    """Whether an item's `value` satisfies the filter's `wanted`: operators, nested dicts,
    lists element by element, else equality (LangGraph's InMemoryStore and PostgresStore)."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return value == wanted


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported filter operator: {op}")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is never greater or smaller
    return {
        "$gt": left > right,
        "$gte": left >= right,
        "$lt": left < right,
        "$lte": left <= right,
    }[op]


def value_matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    return not filter or all(_compare(value.get(k), w) for k, w in filter.items())


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)
