import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# web and worker log in as the app role, which row security confines (kindmem/row_security.py)
os.environ.setdefault("KINDMEM_DATABASE_LOGIN", "app")
# named for the process's kind in pg_stat_activity (one kept connection per sync worker)
os.environ.setdefault("KINDMEM_APPLICATION_NAME", "kindmem-web")
# traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (config/tracing.py): before the app loads
# its middleware, which the Django instrumentation joins
from config.tracing import tracing_start

tracing_start()
application = get_wsgi_application()

# Refuse to serve on a database that could lose committed memory (fsync or full_page_writes
# off) or lacks pgvector 0.8.
from config.durability import assert_confined_login, assert_durable_database  # noqa: E402

assert_durable_database()
assert_confined_login()

# Everything loaded so far lives as long as the worker (config/collector.py).
from config.collector import tune_for_serving  # noqa: E402

tune_for_serving()
