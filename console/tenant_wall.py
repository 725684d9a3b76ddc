"""The console's tenant wall: staff of one tenant never see another tenant.

Every console page, form choice, list filter, autocomplete and count is built from the staff
member's own tenant; platform staff (staff with no tenant, README "Database roles") see every
tenant's. Row-level security already confines a tenant staff member's connection to their
tenant's rows, but it is the second wall, not this one:

- two tables a console page reads stay outside it: `kindmem_tenant` (it has no tenant column)
  and `kindmem_user` (read to sign in, before any tenant is known), so a tenant dropdown, a
  tenant filter or a user list built from them named every tenant;
- a write the wall refuses is a database error, a 500, where the staff member should have
  got a form error or a 404.

So every console queryset goes through `console_scope`, and `TenantScopedAdmin` applies it to
everything a `ModelAdmin` builds: its rows (list, counts, change pages, bulk actions, the
autocomplete answers other pages ask it for), the choices of its forms' relation fields, its
list filters' choices. A form field that names a tenant, where only one is possible, is
preselected and hidden (`confine_tenant_field`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import (
    get_fields_from_path,
    get_model_from_relation,
    reverse_field_path,
)
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.text import capfirst

from console.lists import CappedCountPaginator
from console.names import Named, Names
from console.scope import console_scope as console_scope
from console.scope import is_platform_staff as is_platform_staff
from console.scope import tenant_field as tenant_field
from console.scope import tenant_scope
from kindmem.models import Tenant
from kindmem.row_security import ALL_TENANTS


def the_only_tenant(request: HttpRequest, *, optional: bool = False) -> Any:
    """The one tenant a form of this user can name, or None when there is a choice.

    A tenant staff member's is theirs. Platform staff choose, unless a single tenant exists
    and naming none is not a choice (`optional`: a user may belong to no tenant)."""
    scope = tenant_scope(request)
    if scope and scope != ALL_TENANTS:
        return scope
    if optional or not scope:
        return None
    first_two = list(Tenant.objects.order_by("name").values_list("pk", flat=True)[:2])
    return first_two[0] if len(first_two) == 1 else None


def confine_tenant_field(
    request: HttpRequest, field: forms.ModelChoiceField, *, optional: bool = False
) -> Any:
    """Limit a tenant form field to the tenants this user may name, and when that is one,
    preselect and hide it (required: a tenant staff member never names "no tenant").

    Returns the preselected tenant's id, or None. A posted value naming another tenant is
    then "Select a valid choice", a form error, before any write reaches row security."""
    assert field.queryset is not None  # a ModelChoiceField always has one
    field.queryset = console_scope(request, field.queryset)
    only = the_only_tenant(request, optional=optional)
    if only is not None:
        field.widget = forms.HiddenInput()
        field.initial = only
        field.required = True
    return only


class TenantRelatedFilter(admin.RelatedFieldListFilter):
    """A relation's filter choices from the user's own tenant only: Django's lists every row of
    the related table, and the tenant and user tables stand outside row security."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        related = get_model_from_relation(field)
        ordering = self.field_admin_ordering(field, request, model_admin)
        visible = console_scope(request, related._default_manager.all())
        return field.get_choices(
            include_blank=False,
            limit_choices_to={"pk__in": visible.values("pk")},
            ordering=ordering,
        )


class TenantAllValuesFilter(admin.AllValuesFieldListFilter):
    """A filter on a value across a relation (`conversation__participant_id`): Django takes
    its choices from every row of the related table; these come from the user's tenant's."""

    def __init__(
        self,
        field: Any,
        request: HttpRequest,
        params: Any,
        model: Any,
        model_admin: Any,
        field_path: str,
    ) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        parent_model, _ = reverse_field_path(model, field_path)
        if parent_model is not model:
            self.lookup_choices = (
                console_scope(request, parent_model._default_manager.all())
                .distinct()
                .order_by(field.name)
                .values_list(field.name, flat=True)
            )


class TenantScopedAdmin(admin.ModelAdmin):
    """A ModelAdmin confined to the staff member's tenant (platform staff: every tenant).

    Rows come from `console_scope`; another tenant's object is a 404, never the stock
    "doesn't exist" redirect (which repeats the id); relation fields offer the tenant's rows
    only; the tenant field is preselected and hidden where one tenant is possible; list filters
    list the tenant's rows, and a tenant staff member has no tenant filter (it has one value).

    Lists page by 50, count at most 10,000 rows and never count the whole table a second time
    (console/lists.py): a page costs the same whatever the size of the tenant.
    """

    list_per_page = 50
    show_full_result_count = False
    paginator = CappedCountPaginator

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return console_scope(request, super().get_queryset(request))

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # The list's name ("Erasure requests"), in the page's title and heading: Django's
        # "Select erasure request to view" is a picker's wording; an admin's own title wins.
        context = {"title": capfirst(self.model._meta.verbose_name_plural), **(extra_context or {})}
        return super().changelist_view(request, context)

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        found = super().get_object(request, object_id, from_field)
        if found is None:
            raise Http404("No such object.")
        self._name_rows(request, [found])
        return found

    # --- names, not ids (console/names.py) -------------------------------------

    def names_wanted(self, obj: Any) -> Iterable[tuple[str, Any]]:
        """The (kind, value) pairs this admin's columns show by name for `obj` ("principal",
        its `requested_by`): looked up once for the page's rows, never per row."""
        return ()

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        # The page's rows: evaluated here once, and the template iterates the same instances.
        self._name_rows(request, changelist.result_list)
        return changelist

    def _name_rows(self, request: HttpRequest, rows: Iterable[Any]) -> None:

        rows = list(rows)
        names = Names(request)
        for row in rows:
            for kind, value in self.names_wanted(row):
                names.want(kind, value, getattr(row, "tenant_id", None))
        for row in rows:
            row._console_names = names

    def name_link(self, obj: Any, kind: str, value: Any) -> str:
        """`value` by name, linked to its page, for a column of `obj`'s row."""

        names = getattr(obj, "_console_names", None)
        if names is None:  # a row no page named (an inline's): the id as it is
            return Named(str(value), title=str(value)).html() if value not in (None, "") else "—"
        return names.link(kind, value, getattr(obj, "tenant_id", None))

    def get_field_queryset(self, db: Any, db_field: Any, request: HttpRequest) -> Any:
        queryset = super().get_field_queryset(db, db_field, request)
        if queryset is None:
            queryset = db_field.remote_field.model._default_manager.using(db).all()
        return console_scope(request, queryset)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        if (
            formfield is not None
            and db_field.is_relation
            and db_field.related_model is Tenant
            and isinstance(formfield, forms.ModelChoiceField)
        ):
            confine_tenant_field(request, formfield, optional=db_field.null)
        return formfield

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = super().get_changeform_initial_data(request)
        field = tenant_field(self.model)
        if field is not None:
            only = the_only_tenant(request, optional=field.null)
            if only is not None:
                initial[field.name] = only  # never another tenant named in the query string
        return initial

    def get_list_filter(self, request: HttpRequest) -> Any:
        confined = not is_platform_staff(request)
        scoped: list[Any] = []
        for entry in super().get_list_filter(request):
            if isinstance(entry, str):
                path, filter_class = entry, None
            elif isinstance(entry, (list, tuple)):
                path, filter_class = entry
            else:  # a SimpleListFilter: its own lookups
                scoped.append(entry)
                continue
            fields = get_fields_from_path(self.model, path)
            if confined and any(getattr(f, "related_model", None) is Tenant for f in fields):
                continue
            if filter_class is None:
                if fields[-1].is_relation:
                    filter_class = TenantRelatedFilter
                elif len(fields) > 1:
                    filter_class = TenantAllValuesFilter
                else:
                    scoped.append(entry)
                    continue
            scoped.append((path, filter_class))
        return scoped


def principal_names(request: HttpRequest, principals: Iterable[str]) -> dict[str, str]:
    """A readable name for each principal string of the audit stream and the decision columns
    that names someone the staff member may see (`console.names`), in a few queries
    whatever their number. An id that names nothing visible is left out: it is shown as it is."""

    wanted = set(principals)
    names = Names(request)
    names.want_all("principal", wanted)
    return {p: found.label for p in wanted if (found := names.named("principal", p)) is not None}


@functools.lru_cache(maxsize=8)
def _person_page_path(script_prefix: str) -> str:
    from django.urls import reverse

    return reverse("admin:privacy_person")


def person_url(kind: str, subject_id: str, tenant_id: Any = None) -> str:
    """The console page of everything kindmem knows about a person (privacy's person page,
    reached by URL name: the console is the one place that wires every app together). The
    path is reversed once per script prefix: a list names a person in every row (the review
    queue's 50 rows reversed it 100 times, 10% of the page)."""
    from django.urls import get_script_prefix

    query = {"subject": f"{kind}:{subject_id}"}
    if tenant_id is not None:
        query["tenant"] = str(tenant_id)
    return f"{_person_page_path(get_script_prefix())}?{urlencode(query)}"


def person_link(kind: str, subject_id: Any, tenant_id: Any = None, label: str = "") -> str:
    """A person's id (or `label`, their name where the row already holds it) as a link to
    their page, marked up as every console name is (`console.names.Named`); "—" for
    no one."""

    if subject_id in (None, ""):
        return "—"
    url = person_url(kind, str(subject_id), tenant_id)
    return Named(label or str(subject_id), url, f"{kind}:{subject_id}").html()


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def readable_content(content: Any) -> dict[str, Any]:
    """A revision's content (or a log payload) as people read it: its text (a string, or an
    object's `text`) and, for the rest of an object, `pairs` [(key, value as text)] for a
    definition list. Pages render it escaped: content comes from agents."""
    if isinstance(content, str):
        return {"text": content, "pairs": []}
    if isinstance(content, dict):
        text = content.get("text")
        rest = {k: v for k, v in content.items() if not (k == "text" and isinstance(v, str))}
        shown: dict[str, Any] = {"pairs": [(str(k), _as_text(v)) for k, v in rest.items()]}
        if isinstance(text, str):
            shown["text"] = text
        return shown
    return {"text": _as_text(content), "pairs": []}
