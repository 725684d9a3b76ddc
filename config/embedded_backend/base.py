"""PostgreSQL on the embedded server of `KINDMEM_DATA_DIR` (`config.embedded_db`).

The settings name this backend when no DATABASE_URL is set; the server is started (or joined)
when a process first connects, not when it loads its settings: `manage.py check`, the
schema, a `--help` or an import of the settings run nothing. The server's socket directory and
port are known only once it runs, so they are filled in here; a login with no `USER` is the
server's superuser (the migration login), the app login names its role.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from config.embedded_db import ensure_embedded_database
from config.postgresql_backend import base


@cache
def _server(data_dir: str) -> dict[str, str]:
    """One start (or join) per process: it registers the process with the server."""
    return ensure_embedded_database(Path(data_dir))


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        server = _server(self.settings_dict["EMBEDDED_DATA_DIR"])
        params["host"], params["port"] = server["host"], server["port"]
        params["user"] = self.settings_dict["USER"] or server["user"]
        return params
