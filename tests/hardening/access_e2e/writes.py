"""Facts written through `/v1/facts` and `remember`, by keys and runs, and links between them."""

from __future__ import annotations

from typing import Any

from tests.approvals.conftest import DECLARATIONS
from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import (
    EXTERNAL,
    FACT_WORD,
    INSTRUCTION,
    PARTICIPANTS,
    ApprovalM,
    Cred,
    FactM,
    RevM,
    RunM,
    TenantM,
    is_wide,
)
from tests.oracles import is_readable_by


class FactsWrite(Driver):
    """Facts and links, written through the API."""

    def scope_options(self, t: TenantM) -> list[dict[str, str]]:
        options: list[dict[str, str]] = [{}]
        options += [{"org_id": o} for o in t.orgs]
        options += [{"user_id": u} for u in t.users]
        for project in t.projects:
            options.append({"project_id": project})
            options += [{"project_id": project, "participant_id": p} for p in PARTICIPANTS]
            options += [{"project_id": project, "user_id": u} for u in t.users]
        for thread, (project, person) in t.threads.items():
            options.append({"project_id": project, "thread_id": thread})
            if person is not None:
                kind, pid = person
                options.append({"project_id": project, f"{kind}_id": pid, "thread_id": thread})
        return options

    def resolved(self, t: TenantM, scope: dict[str, str]) -> dict[str, str]:
        out = dict(scope)
        if "project_id" in out:
            out["org_id"] = t.projects[out["project_id"]]
        return out

    def fact_write(
        self,
        cred: Cred,
        scope: dict[str, str],
        *,
        text: str | None = None,
        subjects: list[dict[str, str]] | None = None,
        legal_hold: bool = False,
        want: int = 201,
    ) -> FactM | None:
        t = cred.tenant
        n = next(self.seq)
        text = text or f"{FACT_WORD} {self.text()} f{n}"
        body: dict[str, Any] = {
            "type": self.rng.choice(["note", "preference", "profile", "policy"]),
            "content": {"text": text},
            "scope": scope,
        }
        if self.rng.random() < 0.3:
            body["key"] = f"k{n}"
        if self.rng.random() < 0.2:
            body["tags"] = ["blue"]
        if subjects is not None:
            body["subjects"] = subjects
        if legal_hold:
            body["retention"] = {"legal_hold": True}
        response = self.call(cred, "POST", "facts", "/v1/facts", body)
        if not self.status("write", cred, response, want, f"writes {scope}") or want != 201:
            return None
        out = response.json()
        if subjects is not None:
            subject_set = frozenset((s["kind"], s["id"]) for s in subjects)
        elif "participant_id" in scope:
            subject_set = frozenset({("participant", scope["participant_id"])})
        elif "user_id" in scope:
            subject_set = frozenset({("user", scope["user_id"])})
        else:
            subject_set = frozenset()
        waits = cred.kind == "run" and (is_wide(scope) or INSTRUCTION in text)
        self.check(
            "write",
            (out["approval_id"] is not None) == waits,
            lambda: f"{cred.name} wrote {scope} {text!r}: approval {out['approval_id']}",
        )
        revision = RevM(
            id=out["fact"]["revision_id"],
            content={"text": text},
            subjects=subject_set,
            run_id=cred.run.id if cred.run else None,
            review="pending" if waits else None,
            approval_id=out["approval_id"],
        )
        fact = FactM(
            id=out["fact"]["id"],
            tenant=t,
            scope=self.resolved(t, scope),
            type=body["type"],
            key=body.get("key"),
            writer=cred,
            revisions=[revision],
            legal_hold=legal_hold,
        )
        self.check(
            "write",
            out["fact"]["scope"] == fact.scope and out["fact"]["review"] == revision.review,
            lambda: f"{cred.name} wrote {out['fact']}, want scope {fact.scope}",
        )
        t.facts.append(fact)
        if revision.approval_id:
            t.approvals[revision.approval_id] = ApprovalM(revision.approval_id, fact, revision)
        return fact

    def facts_write(self, t: TenantM) -> None:
        rng = self.rng
        options = self.scope_options(t)
        people = [c for c in t.creds if c.kind != "run"]
        for _ in range(rng.randint(20, 24)):
            scope = dict(rng.choice(options))
            if rng.random() < 0.15:
                scope["session_id"] = "s-1"
            writers = [c for c in people if is_readable_by(self.resolved(t, scope), c.readers)]
            writer = rng.choice(writers)
            subjects = None
            roll = rng.random()
            if roll < 0.12:
                subjects = [{"kind": "external", "id": EXTERNAL}]
            elif roll < 0.22:
                subjects = [{"kind": "participant", "id": rng.choice(PARTICIPANTS)}]
            self.fact_write(writer, scope, subjects=subjects, legal_hold=rng.random() < 0.05)
        # refused: a scope the writer cannot read (it may write only where it may read)
        for cred in people:
            unreadable = [
                s for s in options if not is_readable_by(self.resolved(t, s), cred.readers)
            ]
            if unreadable and rng.random() < 0.5:
                self.fact_write(cred, rng.choice(unreadable), want=403)

    def run_scopes(self, run: RunM) -> list[dict[str, str]]:
        if run.user is not None:
            scopes = [{"user_id": run.user}, {"project_id": run.project, "user_id": run.user}]
            if run.thread:
                scopes.append(
                    {"project_id": run.project, "user_id": run.user, "thread_id": run.thread}
                )
            return scopes
        scopes = []
        if run.participant:
            scopes.append({"project_id": run.project, "participant_id": run.participant})
        if run.thread:
            scopes.append({"project_id": run.project, "thread_id": run.thread})
            if run.participant:
                scopes.append(
                    {
                        "project_id": run.project,
                        "participant_id": run.participant,
                        "thread_id": run.thread,
                    }
                )
        return scopes

    def remember(self, run: RunM, *, type: str, key: str | None, text: str) -> FactM | None:
        """`POST /v1/remember` as the run; the model follows the slot rules of README."""
        assert run.cred is not None
        t = run.tenant
        body: dict[str, Any] = {"type": type, "text": text, "tool_call_id": f"c{next(self.seq)}"}
        if key is not None:
            body["key"] = key
        response = self.call(run.cred, "POST", "remember", "/v1/remember", body)
        if not self.status("write", run.cred, response, 201, f"remembers {type}"):
            return None
        out = response.json()
        declared = {d["type"]: d["scope"] for d in DECLARATIONS}[type]
        scope: dict[str, str] = {
            "participant": {"project_id": run.project, "participant_id": run.participant},
            "user": {"user_id": run.user},
            "thread": {"project_id": run.project, "thread_id": run.thread},
            "same-project": {"project_id": run.project},
            "tenant": {},
        }[declared]
        if declared == "thread" and run.participant:
            scope["participant_id"] = run.participant
        person = (
            frozenset({("participant", run.participant)})
            if run.participant
            else frozenset({("user", run.user)})
            if run.user
            else frozenset()
        )
        waits = declared in ("same-project", "tenant") or INSTRUCTION in text
        self.check(
            "write",
            (out["approval_id"] is not None) == waits,
            lambda: f"{run.cred.name} remembered {type} {text!r}: {out['approval_id']}",
        )
        revision = RevM(
            id=out["fact"]["revision_id"],
            content={"text": text, "key": key} if key is not None else {"text": text},
            subjects=person,
            run_id=run.id,
            review="pending" if waits else None,
            approval_id=out["approval_id"],
        )
        fact = next((f for f in t.facts if f.id == out["fact"]["id"]), None)
        if fact is None:
            fact = FactM(
                id=out["fact"]["id"],
                tenant=t,
                scope=self.resolved(t, scope),
                type=type,
                key=key,
                writer=run.cred,
                revisions=[],
            )
            t.facts.append(fact)
            self.check("write", out["outcome"] == "created", lambda: f"remember {out}")
        else:
            # a new value for the slot: older values still waiting close as superseded; the
            # approved one is replaced now only by a value readable now
            self.check("write", out["outcome"] == "superseded", lambda: f"remember {out}")
            for older in fact.revisions:
                if older.invalidated is None and older.review == "pending":
                    older.invalidated = "superseded"
                    if older.approval_id:
                        t.approvals[older.approval_id].status = "superseded"
            approved = fact.current_approved
            if approved is not None and revision.review is None:
                approved.invalidated = "superseded"
        fact.revisions.append(revision)
        self.check(
            "write",
            out["fact"]["scope"] == fact.scope,
            lambda: f"remembered {out['fact']['scope']}, want {fact.scope}",
        )
        if revision.approval_id:
            t.approvals[revision.approval_id] = ApprovalM(revision.approval_id, fact, revision)
        return fact

    def memory(self, instruction_odds: float) -> str:
        text = f"likes {FACT_WORD} {self.text(1)} r{next(self.seq)}"
        return f"{INSTRUCTION}: {text}" if self.rng.random() < instruction_odds else text

    def runs_write(self, t: TenantM) -> None:
        rng = self.rng
        for run in t.runs:
            assert run.cred is not None
            own = self.run_scopes(run)
            for _ in range(rng.randint(1, 2)):
                roll = rng.random()
                if roll < 0.25 or not own:  # wide: waits for review
                    scope = rng.choice([{}, {"project_id": run.project}])
                    self.fact_write(run.cred, scope)
                elif roll < 0.4:  # instruction-like: waits for review
                    text = f"{INSTRUCTION}. {FACT_WORD} f{next(self.seq)}"
                    self.fact_write(run.cred, rng.choice(own), text=text)
                else:
                    self.fact_write(run.cred, rng.choice(own))
            types = ["product-insight", "policy"]
            if run.participant:
                types.append("preference")
            if run.user:
                types.append("profile")
            if run.thread:
                types.append("note")
            for _ in range(rng.randint(1, 2)):
                kind = rng.choice(types)
                key = f"slot-{next(self.seq)}" if rng.random() < 0.5 else None
                fact = self.remember(run, type=kind, key=key, text=self.memory(0.15))
                if fact is not None and key is not None and rng.random() < 0.6:
                    # the slot again: a plain value replaces it, an instruction waits beside it
                    self.remember(run, type=kind, key=key, text=self.memory(0.5))
        # refused: a run writes about another end user of its project
        run = next(r for r in t.runs if r.participant)
        assert run.cred is not None
        other = next(p for p in PARTICIPANTS if p != run.participant)
        self.fact_write(run.cred, {"project_id": run.project, "participant_id": other}, want=403)

    def links_write(self, t: TenantM) -> None:
        live = [f for f in t.facts if f.live is not None]
        for _ in range(min(len(live), 18)):
            source, target = self.rng.sample(live, 2)
            if (source.id, target.id) in t.links:
                continue
            response = self.call(
                t.admin,
                "POST",
                "fact-links",
                f"/v1/facts/{source.id}/links",
                {"target": target.id, "type": "related"},
            )
            if self.status("write", t.admin, response, 201, "links facts"):
                t.links.append((source.id, target.id))
