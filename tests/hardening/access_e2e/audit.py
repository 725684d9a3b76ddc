"""The audit stream: every call's event, what a read names, and the lookups by subject and fact."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import PARTICIPANTS, TenantM


class Audit(Driver):
    """The audit stream compared with the calls the test made."""

    def audit(self, t: TenantM, other: TenantM) -> None:
        admin = t.admin
        events: list[dict[str, Any]] = []
        since = 0
        for _ in range(100):
            response = self.call(
                admin, "GET", "audit", "/v1/audit", {"since_seq": since, "limit": 500}
            )
            if not self.status("audit", admin, response, 200, "reads the audit stream"):
                return
            page = response.json()
            events += page["events"]
            if not page["events"]:
                break
            since = page["next_since_seq"]
        universe = len(events) + sum(self.audit_expected.get(other.id, Counter()).values())
        got = Counter((e["principal"], e["endpoint"], e["outcome"]) for e in events)
        want = self.audit_expected[t.id]
        self.compare(
            "audit",
            admin,
            universe,
            dict(want),
            dict(got),
        )
        # a successful read names only what its reader may read, never another tenant's
        creds = {c.principal_id: c for c in [*t.creds, *t.workers]}
        facts = {f.id: f for f in t.facts}
        foreign = {f.id for f in other.facts}
        for event in events:
            cred = creds.get(event["principal"])
            ids = set(event["object_ids"])
            # (a failed read names the id it was asked for, whatever it is)
            named = ids if event["outcome"] == "success" else set()
            self.check(
                "audit",
                cred is not None and not named & foreign,
                lambda e=event: f"{admin.name} sees event {e}",
                pairs=1,
            )
            if (
                cred is None
                or event["outcome"] != "success"
                or event["kind"] != "fact"
                or event["endpoint"]
                not in {
                    "GET facts",
                    "GET fact",
                    "GET fact-revisions",
                    "GET fact-links",
                    "POST facts-search",
                }
            ):
                continue
            unreadable = [
                i for i in ids if i in facts and t.visible(facts[i], cred.readers) is None
            ]
            self.check(
                "audit",
                not unreadable,
                f"{cred.name} read unreadable {unreadable}: {event}",
                pairs=len(ids),
            )
        # a lookup by subject finds the events about the person
        subject = f"participant:{self.rng.choice(PARTICIPANTS)}"
        response = self.call(admin, "GET", "audit", "/v1/audit", {"subject": subject, "limit": 500})
        if self.status("audit", admin, response, 200, f"looks up {subject}"):
            self.compare(
                "audit",
                admin,
                len(events),
                {e["seq"]: e["endpoint"] for e in events if subject in e["subjects"]},
                {e["seq"]: e["endpoint"] for e in response.json()["events"]},
            )
        # a lookup by fact finds the events that name it
        for fact in self.rng.sample(t.facts, 4):
            response = self.call(
                admin, "GET", "audit", "/v1/audit", {"fact_id": fact.id, "limit": 500}
            )
            if self.status("audit", admin, response, 200, f"looks up {fact.id}"):
                self.compare(
                    "audit",
                    admin,
                    len(events),
                    {e["seq"]: e["endpoint"] for e in events if fact.id in e["object_ids"]},
                    {e["seq"]: e["endpoint"] for e in response.json()["events"]},
                )
