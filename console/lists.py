"""Console lists that cost the same at any size of the tenant (bench/console_pages.py).

The Django admin counts every list twice, in full: `COUNT(*)` of the filtered rows for the
paginator and of all rows for "(N total)". On a table of a million rows that is two scans per
page view. `TenantScopedAdmin` (console/tenant_wall.py) drops the second
(`show_full_result_count = False`) and pages with `CappedCountPaginator`, which counts at most
`COUNT_CAP` rows: a list of more says "more than 10,000" (templates/admin/pagination.html),
and a filter or a search narrows it.

A list filter of Django's over a column's values (`AllValuesFieldListFilter`) reads
`SELECT DISTINCT` over the whole table; `RecentValuesFilter` takes the values of the newest
`RECENT_ROWS` rows only, for columns of a few values that every recent row shows (an audit
event's kind, who made it).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

COUNT_CAP = 10_000
RECENT_ROWS = 2_000


class CappedCountPaginator(Paginator):
    """A paginator whose count stops at `COUNT_CAP` + 1: past it, the count is "more than
    `COUNT_CAP`" (`capped`), and pages run to the cap."""

    cap = COUNT_CAP

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return super().count
        # COUNT(*) over a LIMIT subquery: PostgreSQL stops reading at the limit.
        return queryset.order_by()[: self.cap + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > self.cap


class RecentValuesFilter(admin.AllValuesFieldListFilter):
    """Choices from the values of the newest `RECENT_ROWS` rows (by primary key) of the list's
    own rows (the staff member's tenant), and the one chosen: a bounded read, not a DISTINCT
    over every row."""

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
        # The newest rows' values, read down the primary key's index and told apart here: a
        # few thousand short strings, where a DISTINCT over "pk IN (the newest)" read them all.
        newest = model_admin.get_queryset(request).order_by("-pk")
        values = set(newest.values_list(field_path, flat=True)[:RECENT_ROWS])
        chosen = self.lookup_val[0] if self.lookup_val else None
        if chosen:
            values.add(chosen)
        self.lookup_choices = sorted(v for v in values if v is not None)
