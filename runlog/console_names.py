"""The console's names for runs and run log entries (`console.names`): a run by its
agent, an entry by its place in its run, each a link to the run's log timeline."""

from __future__ import annotations

from django.http import HttpRequest

from console.names import Key, Named, may_view, register, url_of, uuids
from console.tenant_wall import console_scope
from kindmem.models import Run
from runlog.models import LogEntry


def timeline_url(request: HttpRequest, run_id: object, sequence: int | None = None) -> str:
    """The run's log (at an entry), if the staff member may open it; "" otherwise."""
    if not may_view(request, LogEntry):
        return ""
    url = url_of("admin:runlog_logentry_timeline", run_id)
    return f"{url}#entry-{sequence}" if sequence is not None else url


def run_label(run: Run) -> str:
    agent = run.agent
    return f"a run of {agent.name or agent.agent_id} ({run.created_at:%d %b %Y %H:%M})"


@register("run")
def _runs(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Run.objects.filter(pk__in=wanted).select_related("agent"))
    return {wanted[run.pk]: run_named(request, run) for run in found}


def run_named(request: HttpRequest, run: Run) -> Named:
    """A run loaded with its agent, named without a lookup."""
    return Named(run_label(run), timeline_url(request, run.pk), str(run.pk))


@register("log")
def _entries(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(
        request, LogEntry.objects.filter(pk__in=wanted).select_related("run__agent")
    ).only("id", "run_id", "sequence", "kind", "run__agent__agent_id", "run__agent__name")
    return {wanted[entry.pk]: entry_named(request, entry) for entry in found}


def entry_named(request: HttpRequest, entry: LogEntry) -> Named:
    """An entry loaded with its run's agent, named without a lookup."""
    agent = entry.run.agent
    return Named(
        f"#{entry.sequence} {entry.kind} of {agent.name or agent.agent_id}",
        timeline_url(request, entry.run_id, entry.sequence),
        str(entry.pk),
    )
