"""The console's fact page: what a fact says now, and how it came to say it.

Its revisions, newest first, each with its content for people, what changed from the one
before (`facts.revision_diff`), its trust and review state, who wrote, verified and ended it,
and what caused it: the run, the run log entries it names, the approval it waited for. Then
the links to and from other facts. Everything is named, not shown by id
(`console.names`): the approvals and log entries too, without this app importing
theirs.

The page costs the same few queries whatever the number of revisions and links
(tests/console/test_fact_page.py holds it to that): the revisions with their runs, their
subjects, the links, then one query per kind of name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from console.names import Named, Names
from console.tenant_wall import readable_content
from facts.console_names import fact_named
from facts.models import Fact, Link, Revision
from facts.revision_diff import WordDiff, revision_text, word_diff

# The newest revisions shown, and links: a slot an agent rewrites often has a long history;
# the page says how many more there are.
REVISIONS_SHOWN = 50
LINKS_SHOWN = 100


@dataclass
class RevisionRow:
    revision: Revision
    shown: dict[str, Any]
    # What changed from the version before it (None for the first version).
    diff: WordDiff | None
    previous_version: int | None
    subjects: list[str]
    # Whom it is about, where that changed from the version before (or, for the first,
    # where it names someone besides the scope's person): said once, not on every revision.
    subjects_shown: list[str] = field(default_factory=list)

    @property
    def written_by(self) -> str:
        """Who wrote it, as a principal string ("agent:support-bot", "user:<id>")."""
        return f"{self.revision.attributed_kind}:{self.revision.attributed_id}"

    @property
    def state(self) -> str:
        """Where the revision stands: current, waiting for review, or why it ended."""
        revision = self.revision
        if revision.invalidation_reason:
            return str(revision.invalidation_reason)
        if revision.review:
            return "pending review"
        if revision.expires_at is not None and revision.expires_at <= timezone.now():
            return "expired"  # no read returns it; the sweep has yet to mark it
        return "current"


@dataclass
class LinkRow:
    link: Link
    outgoing: bool
    other: Fact
    says: str = ""  # the other fact's current text, to recognise it by


@dataclass
class FactPage:
    fact: Fact
    names: Names
    rows: list[RevisionRow] = field(default_factory=list)
    revisions_total: int = 0
    links: list[LinkRow] = field(default_factory=list)
    links_total: int = 0

    @property
    def newest(self) -> RevisionRow | None:
        return self.rows[0] if self.rows else None

    @property
    def current(self) -> RevisionRow | None:
        """The approved revision reads return (else the newest): what the fact says now."""
        live = [r for r in self.rows if r.state == "current"]
        return live[0] if live else self.newest

    @property
    def review(self) -> Named | None:
        """The newest review among the revisions up to the current one: how the fact came to
        say what it says (an approval that was verified leaves the verified revision after
        it)."""
        current = self.current
        for row in self.rows:
            if current is not None and row.revision.version > current.revision.version:
                continue
            found = self.names.named("revision-approval", row.revision.pk)
            if found is not None:
                return found
        return None

    @property
    def revisions_hidden(self) -> int:
        return max(self.revisions_total - len(self.rows), 0)

    @property
    def people(self) -> list[str]:
        """Everyone the fact is about: its scope's person and every revision's subjects, as
        "kind:id" (the audit stream's spelling)."""
        found: dict[str, None] = {}
        if self.fact.participant_id:
            found[f"participant:{self.fact.participant_id}"] = None
        if self.fact.user_id:
            found[f"user:{self.fact.user_id}"] = None
        for row in self.rows:
            found.update(dict.fromkeys(row.subjects))
        return list(found)

    @property
    def also_about(self) -> list[str]:
        """Whom the current revision is about besides the person its scope names."""
        current = self.current
        scoped = _scope_persons(self.fact)
        return [s for s in current.subjects if s not in scoped] if current else []

    @property
    def scope(self) -> list[tuple[str, str, Any]]:
        """Where the fact lives: (what, kind of name or "" for plain text, value), for the
        containers it names."""
        fact = self.fact
        rows: list[tuple[str, str, Any]] = []
        if fact.org is not None:
            rows.append(("org", "", fact.org.name))
        if fact.project_id:
            rows.append(("project", "project", fact.project_id))
        if fact.user_id:
            rows.append(("Kindgi user", "person", f"user:{fact.user_id}"))
        if fact.participant_id:
            rows.append(("participant", "person", f"participant:{fact.participant_id}"))
        if fact.thread_id:
            rows.append(("thread", "", fact.thread_id))
        if fact.session_id:
            rows.append(("session", "", fact.session_id))
        return rows

    @property
    def shown_ids(self) -> list[str]:
        return [str(self.fact.pk), *(str(row.revision.pk) for row in self.rows)]


def _scope_persons(fact: Fact) -> set[str]:
    return {f"participant:{fact.participant_id}", f"user:{fact.user_id}"}


def fact_page(request: HttpRequest, fact: Fact) -> FactPage:
    """The fact page of `fact` (already fetched through the console's tenant wall)."""
    names = Names(request, tenant_id=fact.tenant_id)
    page = FactPage(fact=fact, names=names)
    history = (
        Revision.objects.filter(tenant_id=fact.tenant_id, fact_id=fact.pk)
        .select_related("generated_by_run__agent")
        .prefetch_related("subjects")
        .defer("embedding", "search_text", "search_vector")
        .order_by("-version")
    )
    # One more than is shown: the oldest row shown is compared with the one before it.
    loaded = list(history[: REVISIONS_SHOWN + 1])
    page.revisions_total = (
        len(loaded) if len(loaded) <= REVISIONS_SHOWN else history.order_by().count()
    )
    texts = [revision_text(r.content) for r in loaded]
    for index, revision in enumerate(loaded[:REVISIONS_SHOWN]):
        before = index + 1 < len(loaded)
        page.rows.append(
            RevisionRow(
                revision=revision,
                shown=readable_content(revision.content),
                diff=word_diff(texts[index + 1], texts[index]) if before else None,
                previous_version=loaded[index + 1].version if before else None,
                subjects=sorted(f"{s.kind}:{s.subject_id}" for s in revision.subjects.all()),
            )
        )
    links = (
        Link.objects.filter(tenant_id=fact.tenant_id)
        .filter(Q(source_id=fact.pk) | Q(target_id=fact.pk))
        .select_related("source", "target")
        .order_by("-created_at", "pk")
    )
    loaded_links = list(links[: LINKS_SHOWN + 1])
    page.links_total = (
        len(loaded_links) if len(loaded_links) <= LINKS_SHOWN else links.order_by().count()
    )
    for link in loaded_links[:LINKS_SHOWN]:
        outgoing = link.source_id == fact.pk
        page.links.append(LinkRow(link, outgoing, link.target if outgoing else link.source))
    if page.links:
        says = dict(
            Revision.objects.filter(
                tenant_id=fact.tenant_id, fact_id__in={row.other.pk for row in page.links}
            )
            .live()
            .values_list("fact_id", "search_text")
        )
        for link_row in page.links:
            link_row.says = says.get(link_row.other.pk, "")
    scoped = _scope_persons(fact)
    for index, row in enumerate(page.rows):
        older = page.rows[index + 1].subjects if index + 1 < len(page.rows) else None
        if row.subjects != older and (older is not None or set(row.subjects) - scoped):
            row.subjects_shown = row.subjects
    _want_names(request, page)
    return page


def _want_names(request: HttpRequest, page: FactPage) -> None:
    """Everything the page names, wanted at once: each kind is then one query."""
    fact, names = page.fact, page.names
    names.want("project", fact.project_id)
    names.want_all("person", page.people)
    for row in page.rows:
        revision = row.revision
        names.want("principal", row.written_by)
        names.want("principal", revision.verified_by)
        names.want("principal", revision.invalidated_by)
        names.want("revision-approval", revision.pk)
        names.want_all("log", revision.caused_by_log_id)
        if revision.generated_by_run is not None:
            names.want("run", revision.generated_by_run_id)
    for link_row in page.links:
        # The other fact is loaded with the link: named from it, linked without a query.
        names.add("fact", link_row.other.pk, fact_named(request, link_row.other))
        names.want("principal", link_row.link.created_by)
