"""Subject access exports: asked for, built by the worker's task, downloaded and compared."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from privacy.tasks import build_access_export
from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import EXTERNAL, PARTICIPANTS, Cred, RevM, TenantM


class Exports(Driver):
    """Subject access exports, against the model."""

    def exports(self, t: TenantM, other: TenantM) -> None:
        rng = self.rng
        candidates = (
            [("participant", p) for p in PARTICIPANTS]
            + [("user", u) for u in t.users]
            + [("external", EXTERNAL)]
        )
        candidates = [s for s in candidates if s not in t.holds]
        officer = next(c for c in t.creds if c.officer)
        for cred, subject in zip(
            [t.admin, t.admin, officer], rng.sample(candidates, 3), strict=True
        ):
            document = self.export(cred, subject)
            if document is not None:
                self.export_check(cred, subject, document)

    def export(self, cred: Cred, subject: tuple[str, str]) -> dict[str, Any] | None:
        kind, sid = subject
        response = self.call(
            cred,
            "POST",
            "subject-access-requests",
            "/v1/subject-access-requests",
            {"subject_kind": kind, "subject_id": sid},
        )
        if not self.status("export", cred, response, 202, f"asks for {subject}"):
            return None
        request_id = response.json()["id"]
        build_access_export(request_id, tenant_id=cred.tenant.id)  # the worker's task
        other = next(x for x in self.tenants if x is not cred.tenant)
        response = self.call(
            other.admin,
            "GET",
            "subject-access-request",
            f"/v1/subject-access-requests/{request_id}",
        )
        self.not_found("export", other.admin, response, "reads another tenant's export")
        response = self.call(
            cred, "GET", "subject-access-request", f"/v1/subject-access-requests/{request_id}"
        )
        if not self.status("export", cred, response, 200, "reads its export request"):
            return None
        link = urlsplit(response.json()["download"]["json"])
        response = self.call(
            cred, "GET", "subject-access-request-download", f"{link.path}?{link.query}"
        )
        if not self.status("export", cred, response, 200, "downloads its export"):
            return None
        return json.loads(response.content)

    def export_check(self, cred: Cred, subject: tuple[str, str], doc: dict[str, Any]) -> None:
        t = cred.tenant
        about = [f for f in t.facts if f.is_about(subject)]
        universe = len(self.all_facts())
        want = {f.id: sorted((r.id, self.review_state(t, r)) for r in f.revisions) for f in about}
        got = {
            f["id"]: sorted((r["id"], r["record"]["review"]) for r in f["revisions"])
            for f in doc["facts"]
        }
        self.compare("export", cred, universe, want, got)
        convs = sum(len(x.convs) for x in self.tenants)
        self.compare(
            "export",
            cred,
            convs,
            {c.thread: len(c.messages) for c in t.convs.values() if c.is_about(subject)},
            {c["conversation_id"]: len(c["messages"]) for c in doc["conversations"]},
        )
        runs = sum(len(x.runs) for x in self.tenants)
        self.compare(
            "export",
            cred,
            runs,
            {r.id: len(r.entries) for r in t.runs if r.is_about(subject)},
            {r["id"]: len(r["log"]) for r in doc["runs"]},
        )
        about_ids = {f.id for f in about}
        self.compare(
            "export",
            cred,
            sum(len(x.links) for x in self.tenants),
            {link: "related" for link in t.links if about_ids & set(link)},
            {(k["source_fact_id"], k["target_fact_id"]): k["type"] for k in doc["links"]},
        )
        self.compare(
            "export",
            cred,
            sum(len(x.approvals) for x in self.tenants),
            {a.id: a.status for a in t.approvals.values() if a.fact.id in about_ids},
            {a["id"]: a["status"] for a in doc["approvals"]},
        )
        # nothing about anyone else: no other fact's or run's id anywhere in the document,
        # but for the far end of a link from one of theirs and the runs that wrote theirs
        text = json.dumps({k: v for k, v in doc.items() if k != "accesses"})
        own_ids = set(about_ids) | {r.id for f in about for r in f.revisions}
        own_ids |= {
            f"{c['conversation_id']}#{m['sequence']}"
            for c in doc["conversations"]
            for m in c["messages"]
        }
        own_ids |= {r["id"] for r in doc["runs"]} | {link["id"] for link in doc["links"]}
        strays = [i for a in doc["accesses"] for i in a["object_ids"] if i not in own_ids]
        self.check(
            "export",
            not strays,
            lambda: f"{cred.name} export of {subject} lists {strays}",
            pairs=len(doc["accesses"]),
        )
        linked = {b for a, b in t.links if a in about_ids} | {
            a for a, b in t.links if b in about_ids
        }
        writers = {r.run_id for f in about for r in f.revisions if r.run_id}
        own_runs = {r.id for r in t.runs if r.is_about(subject)}
        strangers = [f.id for f in self.all_facts() if f.id not in about_ids | linked]
        strangers += [r.id for x in self.tenants for r in x.runs if r.id not in own_runs | writers]
        leaked = [i for i in strangers if i in text]
        self.check(
            "export",
            not leaked,
            lambda: f"{cred.name} export of {subject} names {leaked}",
            pairs=len(strangers),
        )

    @staticmethod
    def review_state(t: TenantM, revision: RevM) -> str | None:
        if revision.approval_id:
            return t.approvals[revision.approval_id].status
        return revision.review
