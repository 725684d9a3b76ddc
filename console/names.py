"""Names, not ids: how the console shows a row that a page names by its id.

A page collects what it names (`Names.want(kind, value)`: a principal string, a run id, a fact
id, ...), and each kind is then looked up once for the whole page, in one query whatever the
number of rows. `Names.link(kind, value)` is the name as a link to the row's page, with the
id on hover (`title=`); a name the staff member may not open is plain text, and an id that
names nothing they may see stays the id, as it is stored.

Each app names its own rows: a `console_names.py` module of the app registers a loader per
kind (`register`), found at start-up like admin modules are (`KindmemConfig.ready`). So a
page of a lower app names rows of a higher one (a fact page, its approvals and run log
entries) without importing it, and the console's one naming rule lives here.

Kinds registered here: `principal` (the strings of the audit stream and of the provenance
columns, split into the kinds below), `key`, `project` and `agent`. Others: `person` (privacy),
`run` and `log` (runlog), `fact` and `revision` (facts), `conversation` (recall), `approval`
and `revision-approval` (approvals).
"""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from django.urls import get_script_prefix, reverse
from django.utils.html import format_html

from console.scope import console_scope
from kindmem.models import Agent, ApiKey, Project

# A value to look up, and for a kind registered `by_tenant` the tenant it is of (an agent's own
# id is unique only within one); None for every other kind.
Key = tuple[str, str | None]


@dataclass(frozen=True)
class Named:
    """What a page shows for one id: the name, the page it links to ("" for none), the id
    for the hover, and for a row with a state (an approval) that state, for a badge."""

    label: str
    url: str = ""
    title: str = ""
    state: str = ""

    def html(self) -> str:
        if self.url:
            return format_html(
                '<a href="{}" class="km-name" title="{}">{}</a>', self.url, self.title, self.label
            )
        return format_html('<span class="km-name" title="{}">{}</span>', self.title, self.label)


Loader = Callable[[HttpRequest, set[Key]], dict[Key, Named]]
_LOADERS: dict[str, Loader] = {}
_BY_TENANT: set[str] = set()


def register(kind: str, *, by_tenant: bool = False) -> Callable[[Loader], Loader]:
    """Register the loader of `kind`: given the request and every (value, tenant) a page
    wants, it answers the `Named` of each value it found, in one query, from the staff
    member's tenant only (`console_scope`). The tenant is given for a kind `by_tenant` (a
    value means something only within its tenant, or its link names the tenant), else None."""

    def decorator(loader: Loader) -> Loader:
        _LOADERS[kind] = loader
        if by_tenant:
            _BY_TENANT.add(kind)
        return loader

    return decorator


def as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


def uuids(keys: Iterable[Key]) -> dict[uuid.UUID, Key]:
    """The keys whose value is a UUID, by it (an id from an agent's text may be anything)."""
    return {pk: key for key in keys if (pk := as_uuid(key[0])) is not None}


def may_view(request: HttpRequest, model: type[Model]) -> bool:
    """Whether the staff member may open `model`'s console pages (its ModelAdmin says so);
    asked once per request and model."""
    cache: dict[type[Model], bool] = request.__dict__.setdefault("_km_may_view", {})
    if model not in cache:
        model_admin = admin.site._registry.get(model)
        cache[model] = bool(model_admin and model_admin.has_view_permission(request))
    return cache[model]


# An id no row has, reversed in its place: every console URL pattern takes a UUID there.
_PLACEHOLDER = "00000000-0000-0000-0000-000000000000"


@functools.lru_cache(maxsize=64)
def _url_pattern(viewname: str, script_prefix: str) -> str:
    return reverse(viewname, args=[_PLACEHOLDER])


def url_of(viewname: str, pk: object) -> str:
    """`reverse(viewname, args=[pk])` for a UUID `pk`, the pattern reversed once per process
    and script prefix: a page names a row in every line (the person page reversed a fact's
    URL 34 times, 9% of its time)."""
    return _url_pattern(viewname, get_script_prefix()).replace(_PLACEHOLDER, str(pk))


def change_url(request: HttpRequest, obj: Model) -> str:
    """The row's console page, if the staff member may open it; "" otherwise."""
    if not may_view(request, type(obj)):
        return ""
    opts = obj._meta
    return url_of(f"admin:{opts.app_label}_{opts.model_name}_change", obj.pk)


class Names:
    """The names of what one page shows. Want everything first, then link: each kind is
    looked up once, for every value wanted so far."""

    def __init__(self, request: HttpRequest, tenant_id: Any = None) -> None:
        self.request = request
        self.tenant_id = None if tenant_id is None else str(tenant_id)
        self._wanted: dict[str, set[Key]] = defaultdict(set)  # not looked up yet
        self._asked: dict[str, set[Key]] = defaultdict(set)  # looked up, found or not
        self._found: dict[str, dict[Key, Named]] = defaultdict(dict)

    def _key(self, kind: str, value: Any, tenant_id: Any) -> Key:
        if kind not in _BY_TENANT:
            return (str(value), None)
        tenant = tenant_id if tenant_id is not None else self.tenant_id
        return (str(value), None if tenant is None else str(tenant))

    def want(self, kind: str, value: Any, tenant_id: Any = None) -> None:
        if value in (None, ""):
            return
        if kind == "principal":
            for part_kind, part in principal_parts(str(value)):
                self.want(part_kind, part, tenant_id)
            return
        key = self._key(kind, value, tenant_id)
        if key not in self._asked[kind]:
            self._wanted[kind].add(key)

    def want_all(self, kind: str, values: Iterable[Any], tenant_id: Any = None) -> None:
        for value in values:
            self.want(kind, value, tenant_id)

    def add(self, kind: str, value: Any, named: Named, tenant_id: Any = None) -> None:
        """A name the page already has (its row was loaded with another): no lookup."""
        key = self._key(kind, value, tenant_id)
        self._found[kind][key] = named
        self._asked[kind].add(key)
        self._wanted[kind].discard(key)

    def _resolve(self) -> None:
        for kind, keys in self._wanted.items():
            loader = _LOADERS.get(kind)
            if keys and loader is not None:
                self._found[kind].update(loader(self.request, keys))
            self._asked[kind] |= keys
            keys.clear()

    def named(self, kind: str, value: Any, tenant_id: Any = None) -> Named | None:
        """The name of `value`, or None when it names nothing this staff member may see."""
        if value in (None, ""):
            return None
        self.want(kind, value, tenant_id)
        if any(self._wanted.values()):
            self._resolve()
        if kind == "principal":
            for part_kind, part in principal_parts(str(value)):
                found = self._found[part_kind].get(self._key(part_kind, part, tenant_id))
                if found is not None:
                    return Named(found.label, found.url, str(value), found.state)
            return None
        return self._found[kind].get(self._key(kind, value, tenant_id))

    def link(self, kind: str, value: Any, tenant_id: Any = None) -> str:
        """The name as a link to its page (the id on hover); the id itself, as text, when it
        names nothing this staff member may see; "—" for none."""
        if value in (None, ""):
            return "—"
        found = self.named(kind, value, tenant_id)
        if found is None:
            return Named(str(value), title=str(value)).html()
        return found.html()


def principal_parts(principal: str) -> list[tuple[str, str]]:
    """What a principal string may name, in the order to try: the strings of the audit
    stream ("staff:<user id>", "user:<key id>", "admin:<key id>", "app:<key id>",
    "run:<run id>") and of the provenance columns ("<attributed kind>:<attributed id>":
    "user:<user id>", "service:app:<key id>", "agent:<agent id>"). Anything else ("expiry-sweep",
    "erased") names nothing and is shown as it is."""
    kind, _, rest = principal.partition(":")
    if kind == "service":
        kind, _, rest = rest.partition(":")
    if not rest:
        return []
    if kind == "staff":
        return [("person", f"user:{rest}")]
    if kind == "user":
        # A reviewer's decision and a user's write name the user; an API call, the user's key.
        return [("person", f"user:{rest}"), ("key", rest)]
    if kind in ("admin", "app"):
        return [("key", rest)]
    if kind in ("run", "agent"):
        return [(kind, rest)]
    return []


# --- kindmem's own rows ------------------------------------------------------------------


def key_label(key: ApiKey) -> str:
    """A key by its name and kind; a Kindgi user's by its user."""
    if key.user is not None:
        return f"{key.user.get_username()} (key {key.name})"
    return f"{key.name} ({key.kind} key)"


@register("key")
def _keys(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = (
        console_scope(request, ApiKey.objects.filter(pk__in=wanted))
        .select_related("user")
        .only("id", "tenant_id", "name", "kind", "user__username")
    )
    return {wanted[k.pk]: Named(key_label(k), change_url(request, k), str(k.pk)) for k in found}


@register("project")
def _projects(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    wanted = uuids(keys)
    found = console_scope(request, Project.objects.filter(pk__in=wanted)).only(
        "id", "tenant_id", "name"
    )
    return {wanted[p.pk]: project_named(request, p) for p in found}


def project_named(request: HttpRequest, project: Project) -> Named:
    return Named(project.name, change_url(request, project), str(project.pk))


def agent_named(request: HttpRequest, agent: Agent) -> Named:
    return Named(agent.name or agent.agent_id, change_url(request, agent), agent.agent_id)


@register("agent", by_tenant=True)
def _agents(request: HttpRequest, keys: set[Key]) -> dict[Key, Named]:
    """An agent by its own id ("support-bot"), unique within a tenant: its name if it has
    one. Without a tenant (platform staff on a page of several), an id two tenants use names
    neither."""
    found = console_scope(request, Agent.objects.filter(agent_id__in={v for v, _ in keys})).only(
        "id", "tenant_id", "agent_id", "name"
    )
    by_id: dict[str, list[Agent]] = defaultdict(list)
    for agent in found:
        by_id[agent.agent_id].append(agent)
    named: dict[Key, Named] = {}
    for value, tenant in keys:
        matches = [a for a in by_id.get(value, []) if tenant is None or str(a.tenant_id) == tenant]
        if len(matches) == 1:
            named[(value, tenant)] = agent_named(request, matches[0])
    return named
