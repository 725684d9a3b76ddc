"""Django's PostgreSQL compilers, but for a bulk INSERT on Citus (settings.CITUS).

Django 5.2 sends a bulk INSERT as `INSERT ... SELECT * FROM UNNEST(arrays)`, which Citus runs
by collecting the rows on the coordinator and COPYing them into the shards, and Citus refuses
COPY into a table under row security. On Citus a bulk INSERT is the plain `VALUES (...), ...`
Django sends everywhere else, which Citus routes row by row to the rows' shards."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.backends.postgresql import compiler as postgresql
from django.db.models.sql import compiler as base

SQLCompiler = postgresql.SQLCompiler
SQLDeleteCompiler = postgresql.SQLDeleteCompiler
SQLUpdateCompiler = postgresql.SQLUpdateCompiler
SQLAggregateCompiler = postgresql.SQLAggregateCompiler


class SQLInsertCompiler(postgresql.SQLInsertCompiler):
    def assemble_as_sql(self, fields: Any, value_rows: Any) -> Any:
        if settings.CITUS:
            return base.SQLInsertCompiler.assemble_as_sql(self, fields, value_rows)
        return super().assemble_as_sql(fields, value_rows)
