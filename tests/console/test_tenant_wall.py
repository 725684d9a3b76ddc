"""Staff of one tenant never see another tenant in the console (issue 19).

The walk visits every URL the admin site exposes, built from `admin.site` itself (its own
pages, and every registered ModelAdmin's `get_urls()`: list, add, change, delete, history and
custom pages), every autocomplete endpoint, and every choice of every list filter, as each
of the project's staff roles bound to tenant A while tenant B has rows in every model. No
answer may be a 500 or hold anything of B: its name, its id, its rows' ids or their texts.
A page added later is walked without touching this file; a URL parameter the walk has not
met fails it until `PARAMETERS` says what the parameter takes.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from django.urls.resolvers import RegexPattern, RoutePattern
from django.utils.html import escape

from console.tenant_wall import TenantScopedAdmin, person_url, tenant_field
from facts.models import Fact
from kindmem.models import ApiKey, Run, Tenant, User
from tests.console.conftest import Populated, populate

pytestmark = pytest.mark.django_db

ROLES = ["superuser", "officer", "reviewer"]
# Object pages walked per model and tenant: enough to meet each kind of row.
PER_MODEL = 3
# Path parameters of console URLs, and what fills them: "own" the ModelAdmin's model's ids
# (both tenants'), a model that model's ids, a list those values.
PARAMETERS: dict[str, Any] = {
    "object_id": "own",
    "id": "own",
    "erasure_id": "own",
    "request_id": "own",
    "approval_id": "own",
    "run_id": Run,
    "fmt": ["json", "zip"],
}
# Site pages the walk leaves alone: signing out would walk the rest signed out.
SKIPPED = {"logout"}


def tenant_rows(model: type[Model], tenant: Tenant) -> Any:
    """The tenant's rows of `model`; all rows of a model no tenant owns (groups, heartbeats)."""
    if model is Tenant:
        return Tenant.objects.filter(pk=tenant.pk)
    if tenant_field(model) is None:
        return model._default_manager.all()
    return model._default_manager.filter(tenant=tenant)


def tenant_models() -> list[type[Model]]:
    return [Tenant, *(m for m in apps.get_models() if tenant_field(m) is not None)]


def object_ids(model: type[Model], tenant: Tenant) -> list[Any]:
    return list(tenant_rows(model, tenant).order_by("pk").values_list("pk", flat=True)[:PER_MODEL])


def needles_of(populated: Populated) -> set[str]:
    """Whatever would show tenant B: its name and marker, and the id of each of its rows
    (str and hex for a UUID; the change page's path for a registered model's row)."""
    tenant = populated.world.tenant
    found = {tenant.name, populated.marker}
    for model in tenant_models():
        for pk in tenant_rows(model, tenant).values_list("pk", flat=True):
            if isinstance(pk, uuid.UUID):
                found |= {str(pk), pk.hex}
            if model in admin.site._registry:
                opts = model._meta
                found.add(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[pk]))
    found |= {
        f"kmk_{p}" for p in ApiKey.objects.filter(tenant=tenant).values_list("prefix", flat=True)
    }
    found |= set(Run.objects.filter(tenant=tenant).values_list("thread_id", flat=True)) - {None}
    return found


def _route(pattern: URLPattern) -> tuple[str, list[str]]:
    if not isinstance(pattern.pattern, RoutePattern):
        pytest.fail(f"the walk fills path() routes only, not {pattern.pattern!r}")
    return str(pattern.pattern), list(pattern.pattern.converters)


def _values(param: str, model: type[Model], tenants: list[Tenant], where: str) -> list[str]:
    if param not in PARAMETERS:
        pytest.fail(f"{where}: the walk does not know what <{param}> takes; add it to PARAMETERS")
    filler = PARAMETERS[param]
    if isinstance(filler, list):
        return filler
    target = model if filler == "own" else filler
    return [quote(str(pk)) for tenant in tenants for pk in object_ids(target, tenant)]


def _fill(route: str, values: dict[str, str]) -> str:
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)


def model_admin_urls(tenants: list[Tenant]) -> Iterator[str]:
    """Every URL of every registered ModelAdmin, its path parameters filled with ids of rows
    of both tenants."""
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        base = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for pattern in model_admin.get_urls():
            route, params = _route(pattern)
            where = f"{type(model_admin).__name__} {route!r}"
            choices = [_values(p, model, tenants, where) for p in params]
            for combination in itertools.product(*choices):
                yield base + _fill(route, dict(zip(params, combination, strict=True)))


def site_urls(tenants: list[Tenant], terms: list[str]) -> Iterator[str]:
    """The admin site's own pages: index, app indexes, password change, i18n, the
    view-on-site shortcut for rows of both tenants, and every autocomplete endpoint asked for
    every relation of every registered model, with each search term."""
    prefix = reverse("admin:index")
    for pattern in admin.site.get_urls():
        if isinstance(pattern, URLResolver) or pattern.name in SKIPPED:
            continue  # the ModelAdmins' URLs are walked from the registry
        if isinstance(pattern.pattern, RegexPattern):
            if pattern.name == "app_list":
                labels = {m._meta.app_label for m in admin.site._registry}
                yield from (reverse("admin:app_list", args=[label]) for label in sorted(labels))
            continue  # the final catch-all: no page of its own
        route, params = _route(pattern)
        if pattern.name == "view_on_site":
            for model in admin.site._registry:
                content_type = ContentType.objects.get_for_model(model)
                for tenant in tenants:
                    for pk in object_ids(model, tenant):
                        yield reverse("admin:view_on_site", args=[content_type.pk, quote(str(pk))])
        elif pattern.name == "autocomplete":
            yield from autocomplete_urls(terms)
        elif params:
            pytest.fail(f"site URL {route!r}: the walk does not know what {params} take")
        else:
            yield prefix + route


def autocomplete_urls(terms: list[str]) -> Iterator[str]:
    base = reverse("admin:autocomplete")
    for model in admin.site._registry:
        for relation in model._meta.get_fields():
            if not (relation.is_relation and relation.concrete):
                continue
            for term in terms:
                query = {
                    "app_label": model._meta.app_label,
                    "model_name": model._meta.model_name,
                    "field_name": relation.name,
                    "term": term,
                }
                yield f"{base}?{urlencode(query)}"


def person_urls(tenants: list[Tenant], terms: list[str]) -> Iterator[tuple[str, str]]:
    """The person page (a query-string page: `get_urls` walks it without one) of every
    participant and user of both tenants, with and without their tenant named, and the person
    search for each term; each with what the page may repeat of its own URL (the id asked
    for), which is not a leak."""
    for tenant in tenants:
        participants = set(
            Run.objects.filter(tenant=tenant).values_list("participant_id", flat=True)
        ) | set(Fact.objects.filter(tenant=tenant).values_list("participant_id", flat=True))
        people = [("participant", p) for p in sorted(participants - {None})]
        people += [
            ("user", str(u))
            for u in User.objects.filter(tenant=tenant).values_list("pk", flat=True)
        ]
        for kind, person in people:
            yield person_url(kind, person), person
            yield person_url(kind, person, tenant.id), person
    base = reverse("admin:privacy_person")
    for term in terms:
        yield f"{base}?{urlencode({'q': term})}", term


FILTER_BLOCKS = re.compile(
    r'<nav id="changelist-filter".*?</nav>|<nav class="toplinks">.*?</nav>', re.S
)


def filter_links(base: str, html: str) -> list[str]:
    """The changelist's filter choices (facet counts included) and date-hierarchy links."""
    links = set()
    for block in FILTER_BLOCKS.findall(html):
        for href in re.findall(r'href="(\?[^"]*)"', block):
            links.add(base + href.replace("&amp;", "&"))
    return sorted(links)


def changelist_urls() -> list[str]:
    return [
        reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist")
        for m in admin.site._registry
    ]


def _unechoed(response: Any, echo: str | None) -> str:
    """The page's text without what it repeats of its own URL."""
    text = response.content.decode(errors="replace")
    if echo:
        text = text.replace(echo, "").replace(escape(echo), "")
    return text


@pytest.fixture
def tenants(api: Any, world: Any, other_world: Any) -> tuple[Populated, Populated]:
    return populate(api, world, "zqalpha"), populate(api, other_world, "zqbeta")


def test_every_console_page_is_confined_to_the_staff_members_tenant() -> None:
    # a ModelAdmin that is not a TenantScopedAdmin lists every tenant's tenants and users
    unconfined = [
        type(model_admin).__name__
        for model_admin in admin.site._registry.values()
        if not isinstance(model_admin, TenantScopedAdmin)
    ]
    assert unconfined == []


def test_tenant_b_has_rows_in_every_model(tenants: tuple[Populated, Populated]) -> None:
    # the walk proves something only where B has rows to leak
    _, theirs = tenants
    empty = [
        m._meta.label for m in tenant_models() if not tenant_rows(m, theirs.world.tenant).exists()
    ]
    assert empty == [], f"tenant B has no rows of {empty}: populate() should make some"


@pytest.mark.parametrize("role", ROLES)
def test_a_tenants_staff_walk_the_whole_console_and_never_meet_another_tenant(
    role: str, tenants: tuple[Populated, Populated]
) -> None:
    # given staff of tenant A in one of the roles, and tenant B with rows in every model
    ours, theirs = tenants
    client = Client(raise_request_exception=False)
    client.force_login(ours.staff.by_role(role))
    needles = needles_of(theirs)
    assert ours.world.tenant.name not in needles
    both = [ours.world.tenant, theirs.world.tenant]
    theirs_only = set(model_admin_urls([theirs.world.tenant])) - set(
        model_admin_urls([ours.world.tenant])
    )
    # when they open every console URL, and every choice of every list filter
    # (autocomplete: every row's first page, and a search for B's marker, in its every name)
    urls = [*site_urls(both, terms=["", theirs.marker]), *model_admin_urls(both)]
    echoes = dict(person_urls(both, terms=[theirs.marker, f"{theirs.marker} coffee"]))
    answers: dict[str, Any] = {}
    for url in [*urls, *echoes]:
        answers[url] = client.get(url)
    for changelist in changelist_urls():
        if answers[changelist].status_code == 200:
            for url in filter_links(changelist, answers[changelist].content.decode()):
                answers.setdefault(url, client.get(url))
    # then no answer is a 500, none names B or any of its rows
    errors = [(url, r.status_code) for url, r in answers.items() if r.status_code >= 500]
    assert errors == []
    leaks = [
        (url, sorted(n for n in needles if n in _unechoed(r, echoes.get(url))))
        for url, r in answers.items()
    ]
    assert [leak for leak in leaks if leak[1]] == []
    # and a page naming one of B's rows is not found, whatever the role may see (Django's
    # `<id>/` redirects to `<id>/change/` for any id: that page is walked too)
    shown = [
        (url, answers[url].status_code)
        for url in sorted(theirs_only)
        if not (answers[url].status_code == 302 and answers[url]["Location"] == url + "change/")
    ]
    assert [(url, status) for url, status in shown if status not in {403, 404, 405}] == []
    if role == "superuser":
        assert [(url, status) for url, status in shown if status not in {404, 405}] == []
        # (and the walk did see A's own rows: it read pages, not only refusals)
        assert sum(r.status_code == 200 for r in answers.values()) > 100
        assert any(ours.marker in r.content.decode() for r in answers.values())
