"""The HNSW scan settings a semantic query runs under (pgvector 0.8), for facts and recall.

Per transaction (`set_config(..., true)` is SET LOCAL): iterative index scans, so that rows a
guard filters out do not shrink the page, in strict order, so that the ranking stays exact
among what the scan visits; a candidate list (`ef_search`) wider than pgvector's default 40,
and a cap on the tuples one iterative scan may visit. Each app chooses its figures by
measurement (bench/search.py, bench/recall.py).
"""

from __future__ import annotations

from django.conf import settings


def hnsw_settings(
    ef_search: int, max_scan_tuples: int | None = None, *, local: bool = True
) -> tuple[str, list[str] | None]:
    """The statement and its parameters; run it in the semantic query's transaction (`local`),
    or once on a new connection for every query it will run (`local=False`: a session setting,
    which a transaction's own `local` settings override while it lasts)."""
    if local and settings.CITUS:
        return _citus_scan_settings(ef_search, max_scan_tuples)
    scope = "true" if local else "false"
    sql = (
        f"SELECT set_config('hnsw.iterative_scan', 'strict_order', {scope}),"
        f" set_config('hnsw.ef_search', %s, {scope})"
    )
    params = [str(ef_search)]
    if max_scan_tuples is not None:
        sql += f", set_config('hnsw.max_scan_tuples', %s, {scope})"
        params.append(str(max_scan_tuples))
    return sql, params


def _citus_scan_settings(ef_search: int, max_scan_tuples: int | None) -> tuple[str, None]:
    """On Citus (settings.CITUS) the scan runs on the workers, which only `SET LOCAL` reaches
    (kindmem/row_security.py): the same settings as statements of their own, no parameters."""
    statements = [
        "SET LOCAL citus.propagate_set_commands = 'local'",
        "SET LOCAL hnsw.iterative_scan = 'strict_order'",
        f"SET LOCAL hnsw.ef_search = {int(ef_search)}",
    ]
    if max_scan_tuples is not None:
        statements.append(f"SET LOCAL hnsw.max_scan_tuples = {int(max_scan_tuples)}")
    return "; ".join(statements), None
