import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kindmem.settings")
application = get_wsgi_application()

# Refuse to serve on a database that could lose committed memory (fsync or full_page_writes
# off) or lacks pgvector 0.8.
from kindmem.durability import assert_durable_database  # noqa: E402

assert_durable_database()
