"""The console's names for facts and revisions (`console.names`): a fact by its type
and slot, a revision by its fact and version, each a link to the fact's page."""

from __future__ import annotations

from django.http import HttpRequest

from console.names import Key, Named, may_view, register, url_of, uuids
from console.tenant_wall import console_scope
from facts.models import Fact, Revision


def fact_label(fact: Fact) -> str:
    return f"{fact.type} · {fact.key}" if fact.key else fact.type


def fact_url(request: HttpRequest, fact_id: object, version: int | None = None) -> str:
    if not may_view(request, Fact):
        return ""
    url = url_of("admin:facts_fact_change", fact_id)
    return f"{url}#revision-{version}" if version is not None else url


@register("fact")
def _facts(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Fact.objects.filter(pk__in=wanted)).only("id", "type", "key")
    return {wanted[f.pk]: fact_named(request, f) for f in found}


def fact_named(request: HttpRequest, fact: Fact) -> Named:
    """A fact already loaded, named without a lookup."""
    return Named(fact_label(fact), fact_url(request, fact.pk), str(fact.pk))


@register("revision")
def _revisions(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(
        request, Revision.objects.filter(pk__in=wanted).select_related("fact")
    ).only("id", "version", "fact_id", "fact__type", "fact__key")
    return {
        wanted[r.pk]: Named(
            f"{fact_label(r.fact)} v{r.version}",
            fact_url(request, r.fact_id, r.version),
            str(r.pk),
        )
        for r in found
    }
