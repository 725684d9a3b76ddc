"""Every record state: facts superseded, verified, deleted and expired; approvals decided;
an erasure's hold."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from facts.models import Revision
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
    TenantM,
    is_wide,
)
from tests.oracles import is_readable_by


class StatesApply(Driver):
    """The record states, applied through the API (and expiry by the ORM)."""

    def readers_of(self, fact: FactM, kinds: tuple[str, ...]) -> list[Cred]:
        return [
            c
            for c in fact.tenant.creds
            if c.kind in kinds and is_readable_by(fact.scope, c.readers)
        ]

    def supersede(self, cred: Cred, fact: FactM, text: str) -> bool:
        """Whether the new value replaced the old one (False: it waits for review, or the
        write failed)."""
        response = self.call(
            cred,
            "POST",
            "fact-supersede",
            f"/v1/facts/{fact.id}/supersede",
            {"content": {"text": text}},
        )
        if not self.status("write", cred, response, 201, f"supersedes {fact.id}"):
            return False
        out = response.json()
        live = fact.live
        assert live is not None
        pending = cred.kind == "run" and (is_wide(fact.scope) or INSTRUCTION in text)
        self.check(
            "write",
            (out["approval_id"] is not None) == pending,
            lambda: f"{cred.name} superseded {fact.id} with {text!r}: {out['approval_id']}",
        )
        if not pending:
            live.invalidated = "superseded"
        revision = RevM(
            id=out["fact"]["revision_id"],
            content={"text": text},
            subjects=live.subjects,
            run_id=cred.run.id if cred.run else None,
            review="pending" if pending else None,
            approval_id=out["approval_id"],
        )
        fact.revisions.append(revision)
        if pending:
            fact.tenant.approvals[revision.approval_id] = ApprovalM(
                revision.approval_id, fact, revision
            )
        return not pending

    def states_apply(self, t: TenantM) -> None:
        rng = self.rng
        expire: list[RevM] = []
        for fact in list(t.facts):
            if fact.live is None:
                continue
            by_run = fact.writer.kind == "run"
            roll = rng.random()
            if roll < 0.25:
                text = f"{FACT_WORD} {self.text()} v{next(self.seq)}"
                if by_run and rng.random() < 0.6:
                    # the run itself: a plain value replaces it, an instruction waits beside it
                    if rng.random() < 0.4:
                        text = f"{INSTRUCTION}. {text}"
                    replaced = self.supersede(fact.writer, fact, text)
                else:
                    cred = rng.choice(self.readers_of(fact, ("admin", "app", "user")))
                    replaced = self.supersede(cred, fact, text)
                if replaced and rng.random() < 0.3:
                    expire.append(fact.revisions[-2])  # an old value past its expiry
            elif roll < 0.32:
                cred = rng.choice(self.readers_of(fact, ("admin", "user")))
                response = self.call(cred, "POST", "fact-verify", f"/v1/facts/{fact.id}/verify", {})
                if self.status("write", cred, response, 201, f"verifies {fact.id}"):
                    live = fact.live
                    assert live is not None
                    live.invalidated = "superseded"
                    fact.revisions.append(
                        RevM(
                            response.json()["fact"]["revision_id"],
                            live.content,
                            live.subjects,
                            verified=True,
                        )
                    )
            elif roll < 0.47:
                own = not (by_run and (is_wide(fact.scope) or fact.live.verified))  # type: ignore[union-attr]
                cred = fact.writer if own and rng.random() < 0.5 else t.admin
                response = self.call(cred, "DELETE", "fact", f"/v1/facts/{fact.id}")
                want = 409 if fact.legal_hold else 200
                if self.status("write", cred, response, want, f"deletes {fact.id}") and want == 200:
                    live = fact.live
                    assert live is not None
                    live.invalidated = "deleted"
            elif roll < 0.57:
                live = fact.live
                assert live is not None
                expire.append(live)
        # a run never alters a verified fact, nor deletes one read beyond its own person
        for fact in t.facts:
            live = fact.live
            if fact.writer.kind != "run" or live is None:
                continue
            if live.verified:
                response = self.call(
                    fact.writer,
                    "POST",
                    "fact-supersede",
                    f"/v1/facts/{fact.id}/supersede",
                    {"content": {"text": f"{FACT_WORD} over a verified value"}},
                )
                self.status("write", fact.writer, response, 403, f"supersedes verified {fact.id}")
            elif is_wide(fact.scope):
                response = self.call(fact.writer, "DELETE", "fact", f"/v1/facts/{fact.id}")
                self.status("write", fact.writer, response, 403, f"deletes wide {fact.id}")
        self.expire(expire)

    def expire(self, revisions: list[RevM]) -> None:
        """Past `expires_at`, as no sweep has run yet: reads must not wait for one."""
        Revision.objects.filter(pk__in=[r.id for r in revisions]).update(
            expires_at=timezone.now() - timedelta(hours=1)
        )
        for revision in revisions:
            revision.expired = True

    def approvals_decide(self, t: TenantM, other: TenantM) -> None:
        rng = self.rng
        deciders = [t.admin, *[c for c in t.creds if c.reviewer]]
        pending = [a for a in t.approvals.values() if a.status == "pending"]
        for approval in pending:
            roll = rng.random()
            cred = rng.choice(deciders)
            if roll < 0.35:
                self.decide(cred, approval, "approve")
            elif roll < 0.45:
                self.decide(cred, approval, "verify")
            elif roll < 0.8:
                self.decide(cred, approval, "reject")
        decided = [a for a in t.approvals.values() if a.status not in ("pending", "superseded")]
        refused = [c for c in t.creds if c.kind != "admin" and not c.reviewer]
        if pending:
            for cred in rng.sample(refused, 3):
                self.decide(cred, pending[-1], "approve", want=403)
            self.decide(other.admin, pending[-1], "reject", want=404)
        if decided:
            self.decide(t.admin, decided[0], "reject", want=409)

    def decide(self, cred: Cred, approval: ApprovalM, how: str, *, want: int = 200) -> None:
        response = self.call(
            cred,
            "POST",
            f"approval-{how}",
            f"/v1/approvals/{approval.id}/{how}",
            {},
        )
        if not self.status("write", cred, response, want, f"{how}s {approval.id}") or want != 200:
            return
        fact, revision = approval.fact, approval.revision
        if how == "reject":
            revision.invalidated = "deleted"
            approval.status = "rejected"
            return
        replaced = fact.current_approved
        if replaced is not None:
            replaced.invalidated = "superseded"
        revision.review = None
        approval.status = "approved"
        if how == "verify":
            approval.status = "verified"
            revision.invalidated = "superseded"
            verified = response.json()["verified_revision_id"]
            fact.revisions.append(
                RevM(verified, revision.content, revision.subjects, verified=True)
            )

    def holds_start(self, t: TenantM) -> None:
        """An erasure in progress (its worker never runs here): the hold stays."""
        rng = self.rng
        kind = rng.choice(["participant", "conversation", "user", "external"])
        target = {
            "participant": lambda: rng.choice(PARTICIPANTS),
            "conversation": lambda: rng.choice(sorted(t.convs)),
            "user": lambda: rng.choice(t.users),
            "external": lambda: EXTERNAL,
        }[kind]()
        # most often someone with a memory still waiting for review
        waiting = sorted(
            {s for a in t.approvals.values() if a.status == "pending" for s in a.revision.subjects}
        )
        if waiting and rng.random() < 0.7:
            kind, target = rng.choice(waiting)
        response = self.call(
            t.admin,
            "POST",
            "erasures",
            "/v1/erasures",
            {"target_kind": kind, "target_id": target, "reason": "asked by email"},
        )
        if self.status("write", t.admin, response, 202, f"erases {kind}:{target}"):
            t.holds.add((kind, target))
