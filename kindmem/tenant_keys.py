"""Relations between two tenant-owned models: they join on the tenant as well as on the key.

On Citus every tenant-owned table is distributed by `tenant_id` (deploy/citus.md), and a join
between two of them is routed to one shard only when it equates their `tenant_id`s. Django
joins a ForeignKey on its one column, so these fields add `parent.tenant_id = child.tenant_id`
to every join they make (a JOIN's ON clause, through `get_extra_restriction`, the hook
GenericRelation uses for its content type). On one PostgreSQL the condition is always true and
costs nothing: both tables lead their indexes with `tenant_id`.

Reading across them stays in the tenant too: the related objects' descriptors (`fact.revisions`,
`revision.fact`, `prefetch_related("subjects")`, `revision.approval`) filter the other side by
the tenant of the rows they start from, so a prefetch or a related manager names its tenant as
a value, which is what Citus routes by (a join's condition alone does not route a query that
has no tenant of its own).

The database constraint is the composite `(tenant_id, x_id) -> (tenant_id, id)`
(kindmem.distribution_sql, read from these fields), so Django's own single-column constraint is
off (`db_constraint=False`); Django's index on `x_id` stays.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.fields.related_descriptors import (
    ForwardManyToOneDescriptor,
    ForwardOneToOneDescriptor,
    ReverseManyToOneDescriptor,
    ReverseOneToOneDescriptor,
)
from django.db.models.lookups import Exact
from django.db.models.sql.where import AND, WhereNode
from django.utils.functional import cached_property


def _tenants_of(instances: list[Any]) -> set[Any]:
    return {instance.tenant_id for instance in instances}


class _PrefetchesInTenant:
    """A forward or one-to-one reverse descriptor whose prefetch names the instances' tenants."""

    def get_prefetch_querysets(self, instances: list[Any], querysets: Any = None) -> Any:
        queryset = querysets[0] if querysets else self.get_queryset()  # type: ignore[attr-defined]
        in_tenant = queryset.filter(tenant_id__in=_tenants_of(instances))
        return super().get_prefetch_querysets(instances, [in_tenant])  # type: ignore[misc]


class _TenantForwardManyToOne(_PrefetchesInTenant, ForwardManyToOneDescriptor):
    pass


class _TenantForwardOneToOne(_PrefetchesInTenant, ForwardOneToOneDescriptor):
    pass


class _TenantReverseOneToOne(_PrefetchesInTenant, ReverseOneToOneDescriptor):
    def get_queryset(self, **hints: Any) -> Any:
        queryset = super().get_queryset(**hints)
        instance = hints.get("instance")  # `revision.approval` asks for its one row with it
        return queryset if instance is None else queryset.filter(tenant_id=instance.tenant_id)


class _TenantReverseManyToOne(ReverseManyToOneDescriptor):
    @cached_property
    def related_manager_cls(self) -> type:
        base = super().related_manager_cls

        class InTenantRelatedManager(base):  # type: ignore[valid-type, misc]
            def _apply_rel_filters(self, queryset: Any) -> Any:
                in_tenant = super()._apply_rel_filters(queryset)
                return in_tenant.filter(tenant_id=self.instance.tenant_id)

            def get_prefetch_querysets(self, instances: list[Any], querysets: Any = None) -> Any:
                # what the base uses when given none: the related model's default queryset
                queryset = querysets[0] if querysets else super(base, self).get_queryset()  # type: ignore[misc]
                in_tenant = queryset.filter(tenant_id__in=_tenants_of(instances))
                return super().get_prefetch_querysets(instances, [in_tenant])

        return InTenantRelatedManager


class _JoinsOnTenant:
    """Mixin for ForeignKey and OneToOneField between two models that each have a `tenant`."""

    remote_field: Any
    model: type[models.Model]

    def get_extra_restriction(self, alias: str, related_alias: str) -> WhereNode:
        # Join.as_sql passes the target's alias first and the alias of this field's model
        # second (ForeignObjectRel swaps them back for a reverse join).
        target_tenant: Any = self.remote_field.model._meta.get_field("tenant")
        own_tenant: Any = self.model._meta.get_field("tenant")
        same_tenant = Exact(target_tenant.get_col(alias), own_tenant.get_col(related_alias))
        return WhereNode([same_tenant], connector=AND)  # type: ignore[list-item]

    def get_extra_descriptor_filter(self, instance: models.Model) -> dict[str, Any]:
        # `revision.fact`: the fact of the revision's tenant
        return {"tenant_id": instance.tenant_id}  # type: ignore[attr-defined]


class TenantForeignKey(_JoinsOnTenant, models.ForeignKey):
    forward_related_accessor_class = _TenantForwardManyToOne
    related_accessor_class = _TenantReverseManyToOne

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("db_constraint", False)
        super().__init__(*args, **kwargs)


class TenantOneToOneField(_JoinsOnTenant, models.OneToOneField):
    """One-to-one within a tenant. Unique, as Django knows it (the reverse accessor, select_related
    across it); in the database, unique on `(tenant, x)` only, which the model declares as a
    UniqueConstraint: a distributed table's unique key must include its distribution column, so
    kindmem.distribution_sql drops the column's own unique constraint."""

    forward_related_accessor_class = _TenantForwardOneToOne
    related_accessor_class = _TenantReverseOneToOne

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("db_constraint", False)
        super().__init__(*args, **kwargs)


class TenantOwned(models.Model):
    """A tenant-owned model: `save()` updates its row by tenant as well as by primary key.

    Citus refuses an UPDATE that sets the distribution column unless the statement's own WHERE
    pins it to the same value (and routes only a statement that names it), while Django's
    `save()` sets every column by the primary key alone. Naming the tenant in the WHERE too
    changes nothing on one PostgreSQL (a row's tenant never changes)."""

    class Meta:
        abstract = True

    def _do_update(self, base_qs: Any, *args: Any, **kwargs: Any) -> Any:
        # Django's one step between save() and its UPDATE (Model._do_update), whatever else
        # it is given
        in_tenant = base_qs.filter(tenant_id=self.tenant_id)  # type: ignore[attr-defined]
        return super()._do_update(in_tenant, *args, **kwargs)
