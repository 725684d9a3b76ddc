"""The driver's core: one request through the real URL (noting the audit event it leaves),
and the counted comparisons whose disagreements are collected, not raised."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from tests.hardening.access_e2e.model import WORDS, Cred, FactM, TenantM, json_body

# The routes whose every call leaves one audit event: (method, route name).
AUDITED = {
    ("GET", "facts"),
    ("GET", "facts-export"),
    ("POST", "facts"),
    ("GET", "fact"),
    ("DELETE", "fact"),
    ("GET", "fact-revisions"),
    ("POST", "fact-supersede"),
    ("POST", "fact-verify"),
    ("GET", "fact-links"),
    ("POST", "fact-links"),
    ("POST", "facts-search"),
    ("GET", "conversation-messages"),
    ("POST", "conversation-messages"),
    ("POST", "recall"),
    ("POST", "remember"),
    ("GET", "approvals"),
    ("POST", "approval-approve"),
    ("POST", "approval-reject"),
    ("POST", "approval-verify"),
    ("POST", "conversation-extract"),
    ("GET", "conversation-extract"),
}
# The privacy routes audit their successes under their own endpoint names.
AUDITED_ON_SUCCESS = {
    ("POST", "subject-access-requests"): "POST access-requests",
    ("GET", "subject-access-request-download"): "GET subject-access-request-download",
}


class Driver:
    """The calls through the real API and the comparisons: what every part of the test uses."""

    def __init__(self, api: APIClient, seed: int) -> None:
        self.api = api
        self.seed = seed
        self.rng = random.Random(seed)
        self.seq = itertools.count(1)
        self.pairs: Counter[str] = Counter()
        self.disagreements: list[str] = []
        self.audit_expected: dict[str, Counter[tuple[str, str, str]]] = {}
        self.tenants: list[TenantM] = []
        self.turn = itertools.count()
        self.as_of = timezone.now()  # set again by `as_of_mark`
        self.calls = 0
        self.extract_statuses: Counter[int] = Counter()  # the extraction route's answers

    # -- calls and checks
    def call(self, cred: Cred, method: str, name: str, path: str, body: Any = None) -> Any:
        """One request through the real URL and middleware; notes the audit event it leaves."""
        client = getattr(self.api, method.lower())
        if method == "GET":
            response = client(path, body, **cred.headers)
        else:
            response = client(path, body, format="json", **cred.headers)
        self.calls += 1
        expected = self.audit_expected.setdefault(cred.tenant.id, Counter())
        if (method, name) in AUDITED:
            outcome = "success" if response.status_code < 400 else "failure"
            expected[(cred.principal_id, f"{method} {name}", outcome)] += 1
        elif (method, name) in AUDITED_ON_SUCCESS and response.status_code < 400:
            expected[(cred.principal_id, AUDITED_ON_SUCCESS[(method, name)], "success")] += 1
        return response

    def check(self, route: str, ok: bool, message: str | Callable[[], str], pairs: int = 1) -> bool:
        """Count `pairs` comparisons; note a disagreement (the message, built only then)."""
        self.pairs[route] += pairs
        if not ok:
            text = message if isinstance(message, str) else message()
            self.disagreements.append(f"[seed {self.seed}] {route}: {text}")
        return ok

    def status(self, route: str, cred: Cred, response: Any, want: int, what: str) -> bool:
        return self.check(
            route,
            response.status_code == want,
            lambda: (
                f"{cred.name} {what}: {response.status_code} (want {want}) "
                f"{response.content[:300]!r}"
            ),
        )

    def not_found(self, route: str, cred: Cred, response: Any, what: str) -> None:
        """A read of what may not be read: a 404 in the error shape, never a 403 or content."""
        body = json_body(response)
        self.check(
            route,
            response.status_code == 404
            and isinstance(body, dict)
            and set(body) == {"code", "message", "details"},
            lambda: f"{cred.name} {what}: {response.status_code} {response.content[:300]!r}",
        )

    def compare(
        self, route: str, cred: Cred, universe: int, want: dict[str, Any], got: dict[str, Any]
    ) -> None:
        """One read's answer against the model: `universe` items were each either expected and
        present with the expected value, or unexpected and absent."""
        self.pairs[route] += universe
        for key in sorted(set(want) | set(got), key=str):
            if key not in got:
                self.disagreements.append(
                    f"[seed {self.seed}] {route}: {cred.name} misses {key} ({want[key]})"
                )
            elif key not in want:
                self.disagreements.append(
                    f"[seed {self.seed}] {route}: {cred.name} got {key} ({got[key]}), "
                    "which it may not read"
                )
            elif want[key] != got[key]:
                self.disagreements.append(
                    f"[seed {self.seed}] {route}: {cred.name} {key}: got {got[key]}, "
                    f"want {want[key]}"
                )

    def text(self, word_count: int = 2) -> str:
        return " ".join(self.rng.sample(WORDS, word_count))

    def all_facts(self) -> list[FactM]:
        return [f for t in self.tenants for f in t.facts]
