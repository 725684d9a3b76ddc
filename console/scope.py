"""What a console user may see: their tenant's rows; every tenant's for platform staff."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest

from kindmem.models import Tenant
from kindmem.row_security import ALL_TENANTS, console_tenant

_Rows = TypeVar("_Rows", bound=QuerySet[Any])


def tenant_scope(request: HttpRequest) -> str:
    # The same answer as the row-security wall's for this session (docs/security.md, "Database
    # roles").
    return console_tenant(request.user) if request.user.is_authenticated else ""


def console_scope(request: HttpRequest, queryset: _Rows) -> _Rows:
    """The rows of `queryset` the signed-in console user may see: their tenant's; every
    tenant's for platform staff; none for anyone else.

    Tenants are scoped by their own id, every model with a `tenant` by it; the rest (groups,
    permissions, worker heartbeats) belong to no tenant and are the same for everyone."""
    scope = tenant_scope(request)
    if scope == ALL_TENANTS:
        return queryset
    if not scope:
        return queryset.none()
    model = queryset.model
    if model is Tenant:
        return queryset.filter(pk=scope)
    if tenant_field(model) is not None:
        return queryset.filter(tenant_id=scope)
    return queryset


def is_platform_staff(request: HttpRequest) -> bool:
    return tenant_scope(request) == ALL_TENANTS


def tenant_field(model: type[Model]) -> Any:
    """The model's foreign key to its tenant, if it has one."""
    for field in model._meta.concrete_fields:
        if field.name == "tenant" and field.is_relation and field.related_model is Tenant:
            return field
    return None
