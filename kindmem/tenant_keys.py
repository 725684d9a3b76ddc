"""Relations between two tenant-owned models: they join on the tenant as well as on the key.

On Citus every tenant-owned table is distributed by `tenant_id` (deploy/citus.md), and a join
between two of them is routed to one shard only when it equates their `tenant_id`s. Django
joins a ForeignKey on its one column, so these fields add `parent.tenant_id = child.tenant_id`
to every join they make (a JOIN's ON clause, through `get_extra_restriction`, the hook
GenericRelation uses for its content type). On one PostgreSQL the condition is always true and
costs nothing: both tables lead their indexes with `tenant_id`.

The database constraint is the composite `(tenant_id, x_id) -> (tenant_id, id)`
(kindmem.distribution_sql, read from these fields), so Django's own single-column constraint is
off (`db_constraint=False`); Django's index on `x_id` stays.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.lookups import Exact
from django.db.models.sql.where import AND, WhereNode


class _JoinsOnTenant:
    """Mixin for ForeignKey and OneToOneField between two models that each have a `tenant`."""

    remote_field: Any
    model: type[models.Model]

    def get_extra_restriction(self, alias: str, related_alias: str) -> WhereNode:
        # Join.as_sql passes the target's alias first and the alias of this field's model
        # second (ForeignObjectRel swaps them back for a reverse join).
        target_tenant = self.remote_field.model._meta.get_field("tenant")
        own_tenant = self.model._meta.get_field("tenant")
        same_tenant = Exact(target_tenant.get_col(alias), own_tenant.get_col(related_alias))
        return WhereNode([same_tenant], connector=AND)


class TenantForeignKey(_JoinsOnTenant, models.ForeignKey):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("db_constraint", False)
        super().__init__(*args, **kwargs)


class TenantOneToOneField(_JoinsOnTenant, models.OneToOneField):
    """One-to-one within a tenant. Unique, as Django knows it (the reverse accessor, select_related
    across it); in the database, unique on `(tenant, x)` only, which the model declares as a
    UniqueConstraint: a distributed table's unique key must include its distribution column, so
    kindmem.distribution_sql drops the column's own unique constraint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("db_constraint", False)
        super().__init__(*args, **kwargs)
