"""The world's tenants, their keys and runs (minted, and refused), conversations and run logs."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.models import Group

from kindmem.access import Principal, Readers
from kindmem.models import Run
from tests import factories
from tests.approvals.conftest import DECLARATIONS, TOOLS, reviewer_group
from tests.conftest import World
from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import (
    AGENTS,
    MESSAGE_WORD,
    PARTICIPANTS,
    ConvM,
    Cred,
    Person,
    RunM,
    TenantM,
    id_set,
)
from tests.oracles import is_recall_readable_by, is_run_readable_by


class TenantsBuild(Driver):
    """Tenants, keys, runs, conversations and run logs, built through the API."""

    def tenant_build(self, label: str, base: World) -> TenantM:
        """One tenant, from a conftest world (tenant, org, project, member user, agent, admin,
        app and user keys) grown with more orgs, projects, users, keys and agents."""
        rng = self.rng
        tenant = base.tenant
        orgs = [base.org, factories.org_create(tenant)]
        projects = [
            base.project,
            factories.project_create(tenant, orgs[0]),
            factories.project_create(tenant, orgs[1]),
        ]
        t = TenantM(
            label=label,
            tenant=tenant,
            id=str(tenant.id),
            orgs=[str(o.id) for o in orgs],
            projects={str(p.id): str(p.org_id) for p in projects},
        )
        base.agent.agent_id = AGENTS[0]
        for agent in [base.agent, factories.agent_create(tenant, AGENTS[1])]:
            agent.memory_declarations = DECLARATIONS
            agent.tools = TOOLS
            agent.save()

        t.creds.append(self.key_cred(t, "admin", base.admin, Readers(all=True)))
        chosen = rng.sample(projects, rng.randint(1, 2))
        app_keys = [(base.app, [base.project]), (factories.app_key_create(tenant, chosen), chosen)]
        for keyed, chosen in app_keys:
            pids = id_set(p.id for p in chosen)
            readers = Readers(
                project_ids=pids,
                org_ids=id_set(p.org_id for p in chosen),
                on_behalf_of_project_ids=pids,
            )
            t.creds.append(self.key_cred(t, "app", keyed, readers, project_ids=tuple(pids)))

        users = [(base.user, base.user_key, [base.project], [])]
        member = rng.sample(projects, rng.randint(0, 2))  # maybe in no project, only an org
        in_orgs = rng.sample(orgs, rng.randint(0, 1))
        user = factories.user_create(tenant, projects=member, orgs=in_orgs)
        users.append((user, factories.user_key_create(user), member, in_orgs))
        reviewer = factories.user_create(tenant, projects=rng.sample(projects, 1))
        reviewer.is_staff = True
        reviewer.save()
        reviewer.groups.add(reviewer_group())
        users.append(
            (reviewer, factories.user_key_create(reviewer), list(reviewer.projects.all()), [])
        )
        officer = factories.user_create(tenant)
        officer.groups.add(Group.objects.get_or_create(name="privacy-officer")[0])
        users.append((officer, factories.user_key_create(officer), [], []))
        for user, keyed, member, in_orgs in users:
            readers = Readers(
                project_ids=id_set(p.id for p in member),
                org_ids=id_set([*(o.id for o in in_orgs), *(p.org_id for p in member)]),
                user_ids=id_set([user.id]),
            )
            cred = self.key_cred(
                t,
                "user",
                keyed,
                readers,
                project_ids=tuple(str(p.id) for p in member),
                user_id=str(user.id),
            )
            cred.reviewer = user is reviewer
            cred.officer = user is officer
            t.creds.append(cred)
            t.users.append(str(user.id))
        self.tenants.append(t)
        return t

    def key_cred(
        self,
        t: TenantM,
        kind: str,
        keyed: factories.Keyed,
        readers: Readers,
        *,
        project_ids: tuple[str, ...] = (),
        user_id: str | None = None,
    ) -> Cred:
        return Cred(
            name=f"{t.label}:{kind}-{next(self.seq)}",
            kind=kind,
            tenant=t,
            token=keyed.token,
            principal_id=f"{kind}:{keyed.key.id}",
            readers=readers,
            principal=keyed.principal,
            project_ids=project_ids,
            user_id=user_id,
        )

    # -- runs
    def thread_for(self, t: TenantM, project: str, person: Person) -> str | None:
        """None, a new thread, or one this project and person already own."""
        own = [th for th, owner in t.threads.items() if owner == (project, person)]
        choice = self.rng.random()
        if choice < 0.2:
            return None
        if own and choice < 0.45:
            return self.rng.choice(own)
        return t.new_thread()

    def mint(
        self,
        minter: Cred,
        *,
        agent: str,
        project: str,
        participant: str | None = None,
        user: str | None = None,
        thread: str | None = None,
        want: int = 201,
    ) -> RunM | None:
        t = minter.tenant
        named = {"participant_id": participant, "user_id": user, "thread_id": thread}
        body = {"agent_id": agent, "project_id": project}
        body |= {name: value for name, value in named.items() if value is not None}
        response = self.call(minter, "POST", "runs", "/v1/runs", body)
        if not self.status("mint", minter, response, want, f"mints {body}") or want != 201:
            return None
        run_user = minter.user_id if minter.kind == "user" else None
        minted = response.json()
        run = RunM(
            id=minted["run"]["id"],
            tenant=t,
            agent=agent,
            project=project,
            participant=participant,
            user=run_user,
            thread=thread,
            minter=minter,
        )
        person: Person = (
            ("participant", participant)
            if participant
            else (("user", run_user) if run_user else None)
        )
        if thread is not None:
            t.threads.setdefault(thread, (project, person))
        readers = Readers(
            project_ids=id_set([project]),
            org_ids=id_set([t.projects[project]]),
            user_ids=id_set([run_user] if run_user else []),
            participant_ids=id_set([participant] if participant else []),
            thread_ids=id_set([thread] if thread else []),
        )
        row = Run.objects.select_related("project", "user").get(pk=run.id)
        run.cred = Cred(
            name=f"{t.label}:run-{next(self.seq)}<{minter.name} for "
            f"{participant or (run_user and 'itself')} in {thread}>",
            kind="run",
            tenant=t,
            token=minted["token"],
            principal_id=f"run:{run.id}",
            readers=readers,
            principal=Principal(kind="run", tenant_id=t.tenant.id, run=row, user=row.user),
            run=run,
        )
        t.runs.append(run)
        t.creds.append(run.cred)
        return run

    def runs_mint(self, t: TenantM) -> None:
        rng = self.rng
        for app in t.cred("app"):
            for i in range(2):
                project = rng.choice(app.project_ids)
                participant = PARTICIPANTS[i] if i == 0 else rng.choice([*PARTICIPANTS, None])
                person: Person = ("participant", participant) if participant else None
                thread = t.new_thread() if i == 0 else self.thread_for(t, project, person)
                if participant is None and thread is None:
                    thread = t.new_thread()  # a run for no one acts in a conversation
                self.mint(
                    app,
                    agent=rng.choice(AGENTS),
                    project=project,
                    participant=participant,
                    thread=thread,
                )
        # a second run in an end user's existing conversation: the two share its thread
        shared = [r for r in t.runs if r.participant and r.thread]
        first = rng.choice(shared)
        self.mint(
            first.minter,
            agent=first.agent,
            project=first.project,
            participant=first.participant,
            thread=first.thread,
        )
        for user in t.cred("user"):
            if not user.project_ids or rng.random() < 0.25:
                continue
            project = rng.choice(user.project_ids)
            person = ("user", user.user_id)
            self.mint(
                user,
                agent=rng.choice(AGENTS),
                project=project,
                user=user.user_id if rng.random() < 0.5 else None,
                thread=self.thread_for(t, project, person),  # type: ignore[arg-type]
            )

    def runs_refused(self, t: TenantM, other: TenantM) -> None:
        """The minting table: who may not mint a run naming whom."""
        rng = self.rng
        app = rng.choice(t.cred("app"))
        project = app.project_ids[0]
        member = next(u for u in t.cred("user") if u.project_ids)
        agent = AGENTS[0]
        self.mint(t.admin, agent=agent, project=project, participant="cust-1", want=403)
        self.mint(app, agent=agent, project=project, user=member.user_id, want=403)
        foreign = [p for p in t.projects if p not in app.project_ids]
        if foreign:
            self.mint(app, agent=agent, project=foreign[0], participant="cust-1", want=403)
        self.mint(app, agent=agent, project=next(iter(other.projects)), want=404)
        theirs = [
            (th, owner)
            for th, owner in t.threads.items()
            if owner[1] and owner[1][0] == "participant" and owner[0] in app.project_ids
        ]
        if theirs:
            thread, (p, (_, owner)) = rng.choice(theirs)
            someone_else = next(x for x in PARTICIPANTS if x != owner)
            self.mint(
                app, agent=agent, project=p, participant=someone_else, thread=thread, want=403
            )
            self.mint(app, agent=agent, project=p, thread=thread, want=403)  # no one's run
            elsewhere = [x for x in app.project_ids if x != p]
            if elsewhere:  # the same end user, in another project
                self.mint(
                    app,
                    agent=agent,
                    project=elsewhere[0],
                    participant=owner,
                    thread=thread,
                    want=403,
                )
        self.mint(
            member, agent=agent, project=member.project_ids[0], participant="cust-1", want=403
        )
        other_user = next(u for u in t.users if u != member.user_id)
        self.mint(member, agent=agent, project=member.project_ids[0], user=other_user, want=403)
        strangers = [p for p in t.projects if p not in member.project_ids]
        if strangers:
            self.mint(member, agent=agent, project=strangers[0], want=403)
        participant_threads = [
            th
            for th, (p, person) in t.threads.items()
            if p == member.project_ids[0] and person and person[0] == "participant"
        ]
        if participant_threads:
            self.mint(
                member,
                agent=agent,
                project=member.project_ids[0],
                thread=participant_threads[0],
                want=403,
            )
        run = rng.choice(t.runs).cred
        assert run is not None
        self.mint(run, agent=agent, project=project, participant="cust-1", want=403)

    # -- conversations
    def messages_post(
        self,
        cred: Cred,
        thread: str,
        count: int,
        *,
        start: dict[str, Any] | None = None,
        want: int = 201,
    ) -> None:
        t = cred.tenant
        roles = [self.rng.choice(["user", "user", "agent", "agent", "tool"]) for _ in range(count)]
        texts = [f"{MESSAGE_WORD} {self.text(1)} m{next(self.seq)}" for _ in range(count)]
        body = {"messages": [{"role": r, "text": x} for r, x in zip(roles, texts, strict=True)]}
        body.update(start or {})
        response = self.call(
            cred, "POST", "conversation-messages", f"/v1/conversations/{thread}/messages", body
        )
        if not self.status("write", cred, response, want, f"appends to {thread}") or want != 201:
            return
        conv = t.convs.get(thread)
        if conv is None:
            if cred.run is not None:
                run = cred.run
                conv = ConvM(thread, t, run.agent, run.project, run.participant, run.user)
            else:
                assert start is not None
                conv = ConvM(
                    thread,
                    t,
                    start["agent_id"],
                    start["project_id"],
                    start.get("participant_id"),
                    start.get("user_id"),
                )
            t.convs[thread] = conv
        sequences = [m["sequence"] for m in response.json()["messages"]]
        conv.messages.extend(zip(sequences, roles, texts, strict=True))

    def conversations_write(self, t: TenantM) -> None:
        rng = self.rng
        for run in t.runs:
            if run.thread is not None and run.cred is not None:
                self.messages_post(run.cred, run.thread, rng.randint(2, 4))
        for app in t.cred("app"):
            for _ in range(rng.randint(1, 2)):
                project = rng.choice(app.project_ids)
                participant = rng.choice([*PARTICIPANTS, None])
                start: dict[str, Any] = {"agent_id": rng.choice(AGENTS), "project_id": project}
                person: Person = None
                if participant:
                    start["participant_id"] = participant
                    person = ("participant", participant)
                elif rng.random() < 0.5:
                    # refused alike: an app names a Kindgi user of the tenant, or an id of no one
                    # (it acts for no Kindgi user, so whether one exists is not told)
                    nobody = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                    user = rng.choice([*t.users, nobody])
                    named = {**start, "user_id": user}
                    self.messages_post(app, t.new_thread(), 1, start=named, want=403)
                thread = t.new_thread()
                t.threads[thread] = (project, person)
                self.messages_post(app, thread, rng.randint(2, 4), start=start)
            # and an app adds to a conversation of one of its projects: an end user's, or no
            # one's; a Kindgi user's own is 404, as one that does not exist (DESIGN rule 1)
            theirs = [c for c in t.convs.values() if c.project in app.project_ids]
            if theirs:
                conv = rng.choice(theirs)
                want = 201 if is_recall_readable_by(conv.row, app.readers) else 404
                self.messages_post(app, conv.thread, 1, want=want)
            owns = [c for c in theirs if c.participant is None and c.user is not None]
            if owns:
                self.messages_post(app, rng.choice(owns).thread, 1, want=404)
        # refused: a person's key appends; a run appends to another conversation; an app to a
        # conversation of a project it does not act for (404, as one that does not exist)
        conv = rng.choice(list(t.convs.values()))
        self.messages_post(rng.choice(t.cred("user")), conv.thread, 1, want=403)
        runs = [r for r in t.runs if r.thread != conv.thread and r.cred is not None]
        if runs:
            self.messages_post(rng.choice(runs).cred, conv.thread, 1, want=403)  # type: ignore[arg-type]
        for app in t.cred("app"):
            outside = [c for c in t.convs.values() if c.project not in app.project_ids]
            if outside:
                self.messages_post(app, outside[0].thread, 1, want=404)
                break

    # -- run logs
    def log_append(self, cred: Cred, run: RunM, *, want: int = 201) -> None:
        payload = {"text": f"step {self.text(1)} e{next(self.seq)}"}
        kind = self.rng.choice(["turn", "tool-call", "note", "decision"])
        response = self.call(
            cred, "POST", "run-log", f"/v1/runs/{run.id}/log", {"kind": kind, "payload": payload}
        )
        if self.status("write", cred, response, want, f"appends to run {run.id}") and want == 201:
            run.entries.append((response.json()["sequence"], kind, payload))

    def logs_write(self, t: TenantM) -> None:
        rng = self.rng
        for run in t.runs:
            assert run.cred is not None
            for _ in range(rng.randint(1, 3)):
                self.log_append(run.cred, run)
        run = rng.choice(t.runs)
        for app in t.cred("app"):
            if run.project in app.project_ids:
                # an app key appends to a run of its projects, but for a Kindgi user's (404)
                self.log_append(app, run, want=201 if self.run_sees(app, run) else 404)
                break
        for app in t.cred("app"):
            owns = [r for r in t.runs if r.project in app.project_ids and r.user is not None]
            if owns:
                self.log_append(app, rng.choice(owns), want=404)  # a Kindgi user's own run
                break
        # refused: a run appends to another run; a key that cannot read the run
        others = [r for r in t.runs if r is not run]
        assert run.cred is not None
        self.log_append(
            run.cred, others[0], want=403 if self.run_sees(run.cred, others[0]) else 404
        )
        outsiders = [
            c
            for c in t.creds
            if c.kind in ("user", "app") and not is_run_readable_by(run.containers, c.readers)
        ]
        if outsiders:
            self.log_append(rng.choice(outsiders), run, want=404)

    def run_sees(self, cred: Cred, run: RunM) -> bool:
        return cred.tenant.run_readable(run, cred.readers)
