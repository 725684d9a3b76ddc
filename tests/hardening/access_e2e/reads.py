"""Every credential reads through every read route, each answer compared with the model."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from django.utils import timezone

from facts.memory_files import parse_memory_file
from kindmem.access import readers_for
from tests.hardening.access_e2e.driver import Driver
from tests.hardening.access_e2e.model import (
    AGENTS,
    FACT_WORD,
    MESSAGE_WORD,
    TOP_K,
    WORDS,
    ApprovalM,
    Cred,
    FactM,
    TenantM,
)
from tests.oracles import memory_file_problems


class Reads(Driver):
    """Every read route, as one credential, against the model."""

    def as_of_mark(self) -> None:
        """Remember what each fact held now, for the as-of reads once it has all changed."""
        self.as_of = timezone.now()
        for fact in self.all_facts():
            fact.held_then = fact.current_approved

    def read_me(self, cred: Cred) -> None:
        self.check(
            "me",
            readers_for(cred.principal) == cred.readers,
            lambda: f"{cred.name}: readers_for {readers_for(cred.principal)} != {cred.readers}",
        )
        response = self.call(cred, "GET", "whoami", "/v1/me")
        got = response.json()["readers"] if response.status_code == 200 else None
        want = {
            "all": cred.readers.all,
            **{
                name: sorted(getattr(cred.readers, name))
                for name in (
                    "project_ids",
                    "org_ids",
                    "user_ids",
                    "participant_ids",
                    "thread_ids",
                    "on_behalf_of_project_ids",
                )
            },
        }
        self.check("me", got == want, lambda: f"{cred.name} /v1/me: {got}, want {want}")

    def read_list(self, cred: Cred) -> None:
        t = cred.tenant
        universe = self.all_facts()
        want = {}
        for fact in t.facts:
            live = t.visible(fact, cred.readers)
            if live is not None:
                want[fact.id] = live.id
        got: dict[str, str] = {}
        limit = self.rng.randint(12, 25)
        params: dict[str, Any] = {"limit": limit}
        for _ in range(50):
            response = self.call(cred, "GET", "facts", "/v1/facts", params)
            if not self.status("list", cred, response, 200, "lists facts"):
                return
            page = response.json()
            for item in page["facts"]:
                if item["id"] in got:
                    self.check("list", False, lambda i=item: f"{cred.name} got {i['id']} twice")
                got[item["id"]] = item["revision_id"]
            if page["next_cursor"] is None:
                break
            params["cursor"] = page["next_cursor"]
        self.compare("list", cred, len(universe), want, got)
        # as of a past record time: what was held then, of the facts still readable now
        response = self.call(
            cred, "GET", "facts", "/v1/facts", {"as_of": self.as_of.isoformat(), "limit": 200}
        )
        if self.status("list", cred, response, 200, "lists facts as of a past time"):
            then = {}
            for fact in t.facts:
                revision = fact.held_then
                if (
                    t.visible(fact, cred.readers) is not None
                    and revision is not None
                    and not revision.expired
                    and not t.revision_held(revision)
                ):
                    then[fact.id] = revision.id
            got = {f["id"]: f["revision_id"] for f in response.json()["facts"]}
            self.compare("list-as-of", cred, len(universe), then, got)
        # and narrowed to one project: the guard still applies inside the narrowing
        project = self.rng.choice(sorted(t.projects))
        response = self.call(
            cred, "GET", "facts", "/v1/facts", {"project_id": project, "limit": 200}
        )
        if self.status("list", cred, response, 200, "lists one project's facts"):
            narrowed = {f["id"]: f["revision_id"] for f in response.json()["facts"]}
            in_project = {f.id for f in t.facts if f.scope.get("project_id") == project}
            self.compare(
                "list",
                cred,
                len(universe),
                {k: v for k, v in want.items() if k in in_project},
                narrowed,
            )

    def read_export(self, cred: Cred) -> None:
        """`GET /v1/facts/export`: the list's facts, each at its live revision, as memory files
        the seed's rules accept; narrowed to a project as the list is."""
        t = cred.tenant
        universe = len(self.all_facts())
        want = {}
        for fact in t.facts:
            live = t.visible(fact, cred.readers)
            if live is not None:
                want[fact.id] = live.id
        project = self.rng.choice(sorted(t.projects))
        in_project = {f.id for f in t.facts if f.scope.get("project_id") == project}
        for params, expected in (
            ({}, want),
            ({"project_id": project}, {k: v for k, v in want.items() if k in in_project}),
        ):
            response = self.call(cred, "GET", "facts-export", "/v1/facts/export", params)
            if not self.status("export-files", cred, response, 200, "exports its facts"):
                return
            archive = zipfile.ZipFile(io.BytesIO(response.content))
            got = {}
            for name in archive.namelist():
                stem = name.removeprefix("facts/").removesuffix(".md")
                text = archive.read(name).decode()
                problems = memory_file_problems(text, stem)
                self.check("export-files", not problems, f"{cred.name} {name}: {problems}")
                if not problems:
                    envelope = parse_memory_file(text, stem=stem).envelope
                    got[stem] = envelope["provenance"]["kindmem"]["revision"]["id"]
            self.compare("export-files", cred, universe, expected, got)

    def sample_facts(self, cred: Cred) -> list[FactM]:
        """Of each kind of fact this credential meets, a few: readable (with history first),
        unreadable by the guard, deleted, expired, pending, rejected, held, another tenant's."""
        t = cred.tenant
        rng = self.rng
        classes: dict[str, list[FactM]] = {}
        for fact in self.all_facts():
            if fact.tenant is not t:
                label = "foreign"
            elif t.visible(fact, cred.readers) is not None:
                label = "readable-history" if len(fact.revisions) > 1 else "readable"
            elif fact.live is not None and not (
                t.scope_held(fact.scope) or t.revision_held(fact.live)
            ):
                label = "guarded"
            elif fact.live is not None:
                label = "held"
            else:
                last = fact.revisions[-1]
                label = (
                    "pending"
                    if last.review == "pending" and last.invalidated is None
                    else "rejected"
                    if last.review == "pending"
                    else "expired"
                    if any(r.expired for r in fact.revisions)
                    else "ended"
                )
            classes.setdefault(label, []).append(fact)
        # one readable (with history if there is one), and four kinds of unreadable, taken in
        # turn: across the credentials every kind is read by many of them
        readable = classes.pop("readable-history", None) or classes.pop("readable", [])
        classes.pop("readable", None)
        labels = sorted(classes)
        start = next(self.turn)
        chosen = {labels[(start + k) % len(labels)] for k in range(min(4, len(labels)))}
        picked = rng.sample(readable, min(len(readable), 1))
        return picked + [rng.choice(classes[label]) for label in sorted(chosen)]

    def read_detail_and_history(self, cred: Cred) -> None:
        for fact in self.sample_facts(cred):
            t = fact.tenant
            same_tenant = t is cred.tenant
            live = t.visible(fact, cred.readers) if same_tenant else None
            response = self.call(cred, "GET", "fact", f"/v1/facts/{fact.id}")
            if live is None:
                self.not_found("detail", cred, response, f"reads {fact.id} ({fact.revisions})")
            elif self.status("detail", cred, response, 200, f"reads {fact.id}"):
                body = response.json()
                self.check(
                    "detail",
                    (body["revision_id"], body["scope"], body["content"])
                    == (live.id, fact.scope, live.content),
                    f"{cred.name} {fact.id}: got {body}, want {live} {fact.scope}",
                )
            history = t.history(fact, cred.readers) if same_tenant else None
            response = self.call(cred, "GET", "fact-revisions", f"/v1/facts/{fact.id}/revisions")
            if history is None:
                self.not_found("revisions", cred, response, f"reads the history of {fact.id}")
                self.pairs["revisions"] += len(fact.revisions) - 1
                continue
            if not self.status("revisions", cred, response, 200, f"reads history {fact.id}"):
                continue
            got = response.json()["revisions"]
            versions = [r["version"] for r in got]
            self.check(
                "revisions",
                versions == sorted(versions, reverse=True) and got[0]["revision_id"] == live.id,  # type: ignore[union-attr]
                f"{cred.name} history of {fact.id} out of order: {got}",
            )
            self.compare(
                "revisions",
                cred,
                len(fact.revisions),
                {r.id: r.content for r in history},
                {r["revision_id"]: r["content"] for r in got},
            )

    def read_links(self, cred: Cred) -> None:
        t = cred.tenant
        linked = {s for s, _ in t.links} | {d for _, d in t.links}
        seeds = [f for f in t.facts if f.id in linked]
        readable = {f.id for f in t.facts if t.visible(f, cred.readers) is not None}
        visible_seeds = [f for f in seeds if f.id in readable]
        hidden_seeds = [f for f in seeds if f.id not in readable]
        picks = self.rng.sample(visible_seeds, min(2, len(visible_seeds)))
        picks += self.rng.sample(hidden_seeds, min(1, len(hidden_seeds)))
        for fact in picks:
            direction = self.rng.choice(["out", "in"])
            response = self.call(
                cred,
                "GET",
                "fact-links",
                f"/v1/facts/{fact.id}/links",
                {"direction": direction, "hops": 3},
            )
            if fact.id not in readable:
                self.not_found("links", cred, response, f"walks from {fact.id}")
                continue
            if not self.status("links", cred, response, 200, f"walks from {fact.id}"):
                continue
            want = self.walk(t, fact.id, readable, direction, 3)
            got = {r["fact"]["id"]: r["hops"] for r in response.json()["reached"]}
            self.compare("links", cred, len(t.facts), want, got)

    @staticmethod
    def walk(
        t: TenantM, seed: str, readable: set[str], direction: str, hops: int
    ) -> dict[str, int]:
        """The links' breadth-first walk, through readable facts only."""
        edges = t.links if direction == "out" else [(b, a) for a, b in t.links]
        visited, frontier, reached = {seed}, {seed}, {}
        for level in range(1, hops + 1):
            following = set()
            for near, far in edges:
                if near in frontier and far in readable and far not in visited:
                    visited.add(far)
                    following.add(far)
                    reached[far] = level
            frontier = following
        return reached

    def read_search(self, cred: Cred) -> None:
        t = cred.tenant
        universe = len(self.all_facts())
        visible = {}
        for fact in t.facts:
            live = t.visible(fact, cred.readers)
            if live is not None:
                visible[fact.id] = live
        every = {fid: r.id for fid, r in visible.items()}
        for mode in ("keyword", "semantic", "hybrid"):
            got = self.search(cred, mode, FACT_WORD, TOP_K)
            if got is not None:
                self.compare(f"search-{mode}", cred, universe, every, got)
        word = self.rng.choice(WORDS)
        got = self.search(cred, "keyword", word, TOP_K)
        if got is not None:
            want = {fid: r.id for fid, r in visible.items() if word in r.text.split()}
            self.compare("search-keyword", cred, universe, want, got)
        # a small top_k: the guard applies before the LIMIT, so the page is full
        got = self.search(cred, "semantic", f"{FACT_WORD} {word}", 3)
        if got is not None:
            self.check(
                "search-semantic",
                len(got) == min(3, len(every)) and all(every.get(k) == v for k, v in got.items()),
                lambda: f"{cred.name} semantic top 3: {got}, of {every}",
                pairs=universe,
            )

    def search(self, cred: Cred, mode: str, query: str, top_k: int) -> dict[str, str] | None:
        response = self.call(
            cred,
            "POST",
            "facts-search",
            "/v1/facts/search",
            {"mode": mode, "query": query, "top_k": top_k},
        )
        if not self.status(f"search-{mode}", cred, response, 200, f"searches {mode}"):
            return None
        return {h["fact"]["id"]: h["fact"]["revision_id"] for h in response.json()["hits"]}

    def read_recall(self, cred: Cred) -> None:
        t = cred.tenant
        universe = sum(len(c.messages) for x in self.tenants for c in x.convs.values())
        readable = [c for c in t.convs.values() if t.recallable(c, cred.readers)]
        both = ["user", "agent"]
        selections = [{"agent_id": a} for a in AGENTS]
        word = self.rng.choice(WORDS)
        for mode, query, roles, route in (
            ("list", None, both, "recall-list"),
            ("keyword", MESSAGE_WORD, ["user"], "recall-keyword"),
            ("keyword", word, both, "recall-keyword"),
            ("semantic", MESSAGE_WORD, both, "recall-semantic"),
        ):
            body: dict[str, Any] = {"selections": selections, "mode": mode, "top_k": TOP_K}
            body["roles"] = roles
            if query is not None:
                body["query"] = query
            response = self.call(cred, "POST", "recall", "/v1/recall", body)
            if not self.status(route, cred, response, 200, f"recalls {mode}"):
                continue
            want: dict[str, Any] = {}
            for conv in readable:
                kept = [m for m in conv.messages if m[1] in roles]
                for i, (seq, _, text) in enumerate(kept):
                    if query is not None and query not in text.split():
                        continue
                    before = kept[i - 1][1:] if i > 0 else None
                    after = kept[i + 1][1:] if i + 1 < len(kept) else None
                    want[f"{conv.thread}#{seq}"] = (text, before, after)
            got = {}
            for hit in response.json()["hits"]:
                m = hit["message"]
                got[f"{m['conversation_id']}#{m['sequence']}"] = (
                    m["text"],
                    (m["before"]["role"], m["before"]["text"]) if m["before"] else None,
                    (m["after"]["role"], m["after"]["text"]) if m["after"] else None,
                )
            self.compare(route, cred, universe, want, got)

    def read_conversations(self, cred: Cred) -> None:
        """A conversation's messages read back in order (every role, tool messages too), by
        whoever may recall it (`isRecallReadableBy`, no hold); a 404 for anyone else."""
        t = cred.tenant
        other = next(x for x in self.tenants if x is not t)
        mine = [c for c in t.convs.values() if t.recallable(c, cred.readers)]
        not_mine = [c for c in t.convs.values() if c not in mine]
        convs = self.rng.sample(mine, min(3, len(mine)))
        convs += self.rng.sample(not_mine, min(2, len(not_mine)))
        # another tenant's, by an id this tenant does not use (ids are per tenant)
        theirs = [c for c in other.convs.values() if c.thread not in t.convs]
        convs += self.rng.sample(theirs, min(1, len(theirs)))
        for conv in convs:
            path = f"/v1/conversations/{conv.thread}/messages"
            response = self.call(cred, "GET", "conversation-messages", path, {"limit": 200})
            if conv not in mine:
                self.not_found("messages", cred, response, f"reads conversation {conv.thread}")
                self.pairs["messages"] += max(len(conv.messages) - 1, 0)
                continue
            if not self.status("messages", cred, response, 200, f"reads {conv.thread}"):
                continue
            got = {m["sequence"]: (m["role"], m["text"]) for m in response.json()["messages"]}
            want = {seq: (role, text) for seq, role, text in conv.messages}
            self.compare("messages", cred, max(len(conv.messages), 1), want, got)

    def read_run_logs(self, cred: Cred) -> None:
        t = cred.tenant
        other = next(x for x in self.tenants if x is not t)
        # up to three it may read, two it may not, and another tenant's
        mine = [r for r in t.runs if t.run_readable(r, cred.readers)]
        not_mine = [r for r in t.runs if r not in mine]
        runs = self.rng.sample(mine, min(3, len(mine)))
        runs += self.rng.sample(not_mine, min(2, len(not_mine)))
        runs += self.rng.sample(other.runs, 1)
        verify = self.rng.sample(runs, 2)
        paged = self.rng.choice(runs)  # one log read a page of one entry at a time
        for run in runs:
            visible = run.tenant is t and t.run_readable(run, cred.readers)
            path = f"/v1/runs/{run.id}/log"
            limit = 1 if run is paged else 100
            response = self.call(cred, "GET", "run-log", path, {"limit": limit})
            if not visible:
                self.not_found("runlog", cred, response, f"reads the log of run {run.id}")
                self.pairs["runlog"] += max(len(run.entries) - 1, 0)
            else:
                got = []
                for _ in range(20):
                    if not self.status("runlog", cred, response, 200, f"reads log {run.id}"):
                        break
                    page = response.json()
                    got += [(e["sequence"], e["kind"], e["payload"]) for e in page["entries"]]
                    if page["next_after_sequence"] is None:
                        break
                    response = self.call(
                        cred,
                        "GET",
                        "run-log",
                        path,
                        {"limit": limit, "after_sequence": page["next_after_sequence"]},
                    )
                self.compare(
                    "runlog",
                    cred,
                    max(len(run.entries), 1),
                    {s: (k, p) for s, k, p in run.entries},
                    {s: (k, p) for s, k, p in got},
                )
            if run in verify:
                response = self.call(cred, "GET", "run-log-verify", f"{path}/verify")
                if not visible:
                    self.not_found("runlog-verify", cred, response, f"verifies run {run.id}")
                elif self.status("runlog-verify", cred, response, 200, f"verifies {run.id}"):
                    body = response.json()
                    self.check(
                        "runlog-verify",
                        body["ok"] and body["length"] == len(run.entries),
                        f"{cred.name} verifies {run.id}: {body}",
                    )

    def read_approvals(self, cred: Cred) -> None:
        t = cred.tenant
        universe = sum(len(x.approvals) for x in self.tenants)
        response = self.call(cred, "GET", "approvals", "/v1/approvals", {"limit": 200})
        if not (cred.kind == "admin" or cred.reviewer):
            self.status("approvals", cred, response, 403, "lists approvals")
            return
        if not self.status("approvals", cred, response, 200, "lists approvals"):
            return
        want = {
            a.id: a.revision.id
            for a in t.approvals.values()
            if a.status == "pending" and not self.approval_held(a)
        }
        got = {a["id"]: a["fact"]["revision_id"] for a in response.json()["approvals"]}
        self.compare("approvals", cred, universe, want, got)

    @staticmethod
    def approval_held(approval: ApprovalM) -> bool:
        """About a held person or conversation: its fact, its subjects or the run that wrote it
        (what the erasure will erase, and reads as nothing until then)."""
        t = approval.fact.tenant
        run = next((r for r in t.runs if r.id == approval.revision.run_id), None)
        return (
            t.revision_held(approval.revision)
            or t.scope_held(approval.fact.scope)
            or (run is not None and t.scope_held(run.containers))
        )

    def held_decisions(self, t: TenantM) -> None:
        """A held person's memory waiting for review is not there to decide, either."""
        held = [a for a in t.approvals.values() if a.status == "pending" and self.approval_held(a)]
        for approval in held[:2]:
            response = self.call(
                t.admin, "POST", "approval-approve", f"/v1/approvals/{approval.id}/approve", {}
            )
            self.not_found("approvals", t.admin, response, f"approves held {approval.id}")

    def reads(self, cred: Cred) -> None:
        self.read_me(cred)
        self.read_list(cred)
        self.read_export(cred)
        self.read_detail_and_history(cred)
        self.read_links(cred)
        self.read_search(cred)
        self.read_recall(cred)
        self.read_conversations(cred)
        self.read_run_logs(cred)
        self.read_approvals(cred)
        if not (cred.kind == "admin" or cred.officer):
            response = self.call(
                cred,
                "POST",
                "subject-access-requests",
                "/v1/subject-access-requests",
                {"subject_kind": "participant", "subject_id": "cust-1"},
            )
            self.status("export", cred, response, 403, "asks for an export")
        if cred.kind != "admin":
            response = self.call(cred, "GET", "audit", "/v1/audit")
            self.status("audit", cred, response, 403, "reads the audit stream")
