"""`POST` and `GET /v1/conversations/{id}/extract`, by every credential of a tenant against
conversations of both tenants, then the queued jobs run by the worker's task against the
scripted chat model (tests/extraction/chat_server.py): what each job shows the model is what
its run may read, and nothing else.

What the reference allows, per (credential, conversation):

- an admin's or a Kindgi user's key: 403 `forbidden` (only a run or an app asks; the role is
  checked before any conversation is looked up, so it says nothing about the conversation);
- a run or an app key, a conversation it may not recall (`isRecallReadableBy`; for an app
  key, a Kindgi user's own conversation in its projects too), or another tenant's: 404, as
  one that does not exist;
- one it may recall whose person or conversation an erasure holds: `POST` 409
  `erasure-in-progress` (nothing is queued), `GET` 404 (a held person's rows read as nothing);
- one it may recall: `POST` 202 `queued` with a job for messages 1..last the first time,
  `already-queued` with the same job after; once the job is applied, 200 `up-to-date`;
  `GET` 200 with the watermark and the job;
- a revoked credential (an app key of the world, and the runs it minted): 401.

The job's run is one the credential that queued it could have minted (DESIGN rule 1), derived
here from the conversation and that credential alone: an app key's names the end user and the
thread, never a Kindgi user (nor, then, that user's thread); a run's names only its own person
and thread. The model is offered only the types that run has a place for and shown exactly
what that run may read; and no Kindgi user's personal fact ever reaches an app key's job: not
in what the model is shown, not in the job's notes the app reads back.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from approvals.review_reasons import review_text
from extraction.models import ExtractionJob, JobStatus
from extraction.tasks import extract_conversation
from kindmem.access import Principal, PrincipalKind, Readers, readers_for
from kindmem.models import Run
from kindmem.services import api_key_revoke
from tests.approvals.conftest import DECLARATIONS
from tests.extraction.chat_server import ChatServer
from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import ConvM, Cred, RunM, TenantM, id_set, json_body
from tests.oracles import is_recall_readable_by

ENDPOINT = "TASK extract_conversation"


def offered(run: RunM) -> list[str]:
    """The declared types a job's run has a place for (`remember_scope`): a participant's,
    a user's and a thread's only where the run names one."""
    named = {"participant": run.participant, "user": run.user, "thread": run.thread}
    return sorted(
        d["type"] for d in DECLARATIONS if d["scope"] not in named or named[d["scope"]] is not None
    )


class Extractions(Driver):
    """The extraction route and its job, against the model."""

    chat: ChatServer  # kindmem's chat model, scripted

    def extractions(self, t: TenantM, other: TenantM) -> None:
        jobs: dict[str, str] = {}  # thread -> the id of the job the first request queued
        self.starters: dict[str, Cred] = {}  # thread -> the credential whose request queued it
        for cred in t.creds:
            for conv in self.extract_sample(cred, other):
                self.extract_ask(cred, conv, jobs)
        self.extract_jobs_run(t, jobs)
        self.extract_revoked(t)

    def extract_sample(self, cred: Cred, other: TenantM) -> list[ConvM]:
        """Up to two conversations it may recall, one it may recall but an erasure holds, two
        it may not recall, and one of another tenant's by an id this tenant does not use."""
        t = cred.tenant
        rng = self.rng
        guarded = [c for c in t.convs.values() if is_recall_readable_by(c.row, cred.readers)]
        mine = [c for c in guarded if not t.conversation_held(c)]
        held = [c for c in guarded if t.conversation_held(c)]
        not_mine = [c for c in t.convs.values() if c not in guarded]
        theirs = [c for c in other.convs.values() if c.thread not in t.convs]
        picked = rng.sample(mine, min(2, len(mine))) + rng.sample(held, min(1, len(held)))
        # an app key and a Kindgi user's own conversation in one of its projects: not the
        # app's (DESIGN rule 1), so not found, and nothing of that user's reaches the model
        users_own = [
            c for c in not_mine if c.user and not c.participant and c.project in cred.project_ids
        ]
        if cred.kind == "app" and users_own:
            picked.append(rng.choice(users_own))
        rest = [c for c in not_mine if c not in picked]
        picked += rng.sample(rest, min(2, len(rest)))
        return picked + rng.sample(theirs, min(1, len(theirs)))

    def extract_ask(self, cred: Cred, conv: ConvM, jobs: dict[str, str]) -> None:
        t = cred.tenant
        path = f"/v1/conversations/{conv.thread}/extract"
        post = self.call(cred, "POST", "conversation-extract", path, {})
        get = self.call(cred, "GET", "conversation-extract", path)
        self.extract_statuses.update([post.status_code, get.status_code])
        if cred.kind not in ("run", "app"):
            for route, response in (("extract", post), ("extractions", get)):
                self.refused(route, cred, response, 403, "forbidden", f"extracts {conv.thread}")
            return
        recallable = conv.tenant is t and is_recall_readable_by(conv.row, cred.readers)
        users_own = conv.user is not None and conv.participant is None
        if (
            cred.kind == "app"
            and conv.tenant is t
            and conv.project in cred.project_ids
            and users_own
        ):
            self.pairs["extract-users-own"] += 1  # a Kindgi user's, in its project: not found
        if not recallable:
            self.not_found("extract", cred, post, f"extracts {conv.thread}")
            self.not_found("extractions", cred, get, f"reads extractions of {conv.thread}")
            return
        if t.conversation_held(conv):
            self.refused("extract", cred, post, 409, "erasure-in-progress", f"extracts held {conv}")
            self.not_found("extractions", cred, get, f"reads extractions of held {conv.thread}")
            return
        last = max(seq for seq, _, _ in conv.messages)
        if self.status("extract", cred, post, 202, f"extracts {conv.thread}"):
            body = post.json()
            job = body["job"]
            first_time = conv.thread not in jobs
            jobs.setdefault(conv.thread, job["id"])
            self.starters.setdefault(conv.thread, cred)
            want = (
                "queued" if first_time else "already-queued",
                conv.thread,
                0,
                last,
                jobs[conv.thread],
                "queued",
                1,
                min(last, settings.EXTRACTION_MAX_MESSAGES),
            )
            got = (
                body["outcome"],
                body["conversation_id"],
                body["extracted_through"],
                body["last_sequence"],
                job["id"],
                job["status"],
                job["first_sequence"],
                job["last_sequence"],
            )
            self.check("extract", got == want, lambda: f"{cred.name} {conv.thread}: {got}, {want}")
        if self.status("extractions", cred, get, 200, f"reads extractions of {conv.thread}"):
            body = get.json()
            got_state = (body["extracted_through"], body["last_sequence"])
            got_jobs = [j["id"] for j in body["jobs"]]
            want_jobs = [jobs[conv.thread]] if conv.thread in jobs else []
            self.check(
                "extractions",
                got_state == (0, last) and got_jobs == want_jobs,
                lambda: f"{cred.name} {conv.thread}: {got_state} {got_jobs}, want {want_jobs}",
            )

    def refused(
        self, route: str, cred: Cred, response: Any, want: int, code: str, what: str
    ) -> None:
        body = json_body(response)
        self.check(
            route,
            response.status_code == want
            and isinstance(body, dict)
            and set(body) == {"code", "message", "details"}
            and body["code"] == code,
            lambda: (
                f"{cred.name} {what}: {response.status_code} (want {want} {code}) "
                f"{response.content[:300]!r}"
            ),
        )

    def extract_jobs_run(self, t: TenantM, jobs: dict[str, str]) -> None:
        """Each queued job, run as the worker runs it: the model is shown the conversation's
        user and agent messages, the agent's declared types and exactly the memories the job's
        run may read (the seed's guard, rule 3, the holds); answered "nothing", it is applied,
        and asking again is up to date."""
        for thread, job_id in sorted(jobs.items()):
            conv = t.convs[thread]
            starter = self.starters[thread]
            worker = self.extraction_cred(t, conv, job_id, starter)
            assert worker.run is not None
            declared = offered(worker.run)
            chats = len(self.chat.chats)
            extract_conversation(job_id, tenant_id=t.id)
            job = ExtractionJob.objects.get(pk=job_id)
            self.check(
                "extract-job",
                job.status == JobStatus.APPLIED,
                f"job {job.id} of {thread}: {job.status} {job.error_code} {job.error}",
            )
            self.audit_expected[t.id][(worker.principal_id, ENDPOINT, "success")] += 1
            shown_messages = [(seq, role, text) for seq, role, text in conv.messages]
            shown_messages = [m for m in shown_messages if m[1] != "tool"]
            asked = self.chat.chats[chats:]
            if not shown_messages:  # only tool messages: nothing to ask the model
                self.check("extract-job", not asked, f"{thread}: asked {len(asked)} times")
                continue
            if not self.check("extract-job", len(asked) == 1, f"{thread}: asked {len(asked)}"):
                continue
            [user] = [m for m in asked[0]["json"]["messages"] if m["role"] == "user"]
            document = json.loads(user["content"])
            self.check(
                "extract-job",
                [(m["id"], m["role"], m["text"]) for m in document["messages"]] == shown_messages
                and sorted(d["type"] for d in document["memory_types"]) == declared,
                f"{thread}: shown {document['messages']} {document['memory_types']}",
            )
            want = {}
            for fact in t.facts:
                live = t.visible(fact, worker.readers)
                if live is not None and fact.type in declared:
                    # (shown as a reviewer reads it: its text, then its other fields, a slot's key)
                    want[fact.id] = (fact.type, review_text(live.content))
            got = {m["id"]: (m["type"], m["text"]) for m in document["existing_memories"]}
            self.compare("extract-memories", worker, len(self.all_facts()), want, got)
            if starter.kind == "app":
                self.personal_facts_unseen(t, starter, thread, user["content"])
        # asked again, each applied conversation is up to date, its job applied
        for thread, job_id in sorted(jobs.items()):
            conv = t.convs[thread]
            cred = self.rng.choice(
                [c for c in t.creds if c.kind in ("run", "app") and t.recallable(conv, c.readers)]
            )
            path = f"/v1/conversations/{thread}/extract"
            last = max(seq for seq, _, _ in conv.messages)
            post = self.call(cred, "POST", "conversation-extract", path, {})
            self.extract_statuses[post.status_code] += 1
            if self.status("extract", cred, post, 200, f"extracts {thread} again"):
                body = post.json()
                got_again = (body["outcome"], body["extracted_through"], body["job"])
                self.check(
                    "extract",
                    got_again == ("up-to-date", last, None),
                    f"{cred.name} extracts {thread} again: {got_again}",
                )
            get = self.call(cred, "GET", "conversation-extract", path)
            if cred.kind == "app":  # the job's notes, as the app reads them back
                self.personal_facts_unseen(t, cred, thread, get.content.decode())
            if self.status("extractions", cred, get, 200, f"reads extractions of {thread}"):
                body = get.json()
                got_jobs = [(j["id"], j["status"], j["decisions"]) for j in body["jobs"]]
                self.check(
                    "extractions",
                    body["extracted_through"] == last and got_jobs == [(job_id, "applied", [])],
                    f"{cred.name} reads extractions of {thread}: {body}",
                )

    def personal_facts_unseen(self, t: TenantM, app: Cred, thread: str, text: str) -> None:
        """No revision of any Kindgi user's personal fact (scoped to the user) is in `text`,
        what an app key's extraction of `thread` showed the model or answered the app."""
        personal = [f for f in t.facts if f.scope.get("user_id")]
        seen = [f.id for f in personal if any(r.text in text for r in f.revisions)]
        self.check(
            "extract-personal",
            not seen,
            lambda: f"{app.name}'s extraction of {thread} carries personal facts {seen}",
            pairs=len(personal),
        )

    def extraction_cred(self, t: TenantM, conv: ConvM, job_id: str, starter: Cred) -> Cred:
        """The run a job writes as (made by kindmem, no token): the conversation's agent and
        project, and of its person and thread those the credential that queued the job stands
        for (the model's own rule, as in the module docstring); the readers the model derives
        from them, checked against `readers_for`."""
        run_id = str(ExtractionJob.objects.values_list("run_id", flat=True).get(pk=job_id))
        row = Run.objects.select_related("project", "user").get(pk=run_id)
        assert conv.project is not None
        if starter.kind == "app":  # every end user of its projects, no Kindgi user
            participant, user = conv.participant, None
            thread = conv.thread if conv.participant or not conv.user else None
        else:  # a run: its own person and thread only
            assert starter.run is not None
            mine = starter.run
            participant = conv.participant if conv.participant == mine.participant else None
            user = conv.user if conv.user is not None and conv.user == mine.user else None
            thread = conv.thread if conv.thread == mine.thread else None
        run = RunM(
            id=run_id,
            tenant=t,
            agent=conv.agent,
            project=conv.project,
            participant=participant,
            user=user,
            thread=thread,
            minter=t.admin,
        )
        readers = Readers(
            project_ids=id_set([conv.project]),
            org_ids=id_set([t.projects[conv.project]]),
            user_ids=id_set([user] if user else []),
            participant_ids=id_set([participant] if participant else []),
            thread_ids=id_set([thread] if thread else []),
        )
        cred = Cred(
            name=f"{t.label}:extraction-run<{conv.thread}>",
            kind="run",
            tenant=t,
            token="",  # it never authenticates
            principal_id=f"run:{run_id}",
            readers=readers,
            principal=Principal(
                kind=PrincipalKind.RUN, tenant_id=t.tenant.id, run=row, user=row.user
            ),
            run=run,
        )
        self.check(
            "extract-job",
            readers_for(cred.principal) == readers
            and (row.agent.agent_id, row.thread_id, row.participant_id)
            == (conv.agent, thread, participant)
            and (str(row.user_id) if row.user_id else None) == user,
            lambda: f"{cred.name}: readers_for {readers_for(cred.principal)} != {readers}",
        )
        t.workers.append(cred)
        return cred

    def extract_revoked(self, t: TenantM) -> None:
        """An app key of the world, revoked, and every run it minted: 401 for each, whatever
        they could recall before (a revoked key leaves no audit event: no one is known)."""
        app = self.rng.choice(t.cred("app"))
        runs = [r.cred for r in t.runs if r.minter is app and r.cred is not None]
        api_key_revoke(key=app.principal.api_key)  # type: ignore[arg-type]
        for cred in [app, *runs]:
            for conv in self.rng.sample(sorted(t.convs.values(), key=lambda c: c.thread), 2):
                path = f"/v1/conversations/{conv.thread}/extract"
                for method in ("POST", "GET"):
                    response = self.call(
                        cred, method, "revoked", path, {} if method == "POST" else None
                    )
                    self.extract_statuses[response.status_code] += 1
                    self.refused(
                        "extract-revoked",
                        cred,
                        response,
                        401,
                        "unauthenticated",
                        f"{method} {path}",
                    )
