from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests import factories

if TYPE_CHECKING:
    from pathlib import Path

    from django.test.utils import override_settings
    from playwright.sync_api import Browser, Page

    from tests.citus_cluster import Cluster
    from tests.processes import Broker

# The parts of a test split out of its module keep pytest's rewritten asserts (their messages
# show the values), as they had in the test module.
pytest.register_assert_rewrite("tests.hardening.access_e2e", "tests.facts.memory_file_requests")

# What one audited request adds inside a test's transaction: the view's savepoint and its
# release, and one statement for the per-tenant lock, the tenant's policy and the insert.
AUDIT_QUERIES = 3
# ...and one a view's read that runs in autocommit adds (AuditedView.reads_in_autocommit, the
# search): the event's one statement, no savepoint.
AUDIT_READ_QUERIES = 1
# What a Bearer request adds for row security: the statement that enters the credential's
# tenant, sent in one round trip with the credential's lookup (a prepared statement each, in one
# pipeline: compiled), which tests count as the key's (or run's) statement, and the one
# that leaves it when the request ends (kindmem/row_security.py).
TENANT_QUERIES = 2
# In the Citus run (below) the tenant's settings are `SET LOCAL`s, which take no function call:
# the credential's tenant is looked up (with every tenant in sight: two statements) before it
# is entered, and the request is a transaction (a savepoint and its release in a test).
if os.environ.get("KINDMEM_TEST_CITUS") == "1":
    TENANT_QUERIES += 4


def pytest_configure(config: pytest.Config) -> None:
    # Fast by configuration: nothing in the suite needs a slow hash.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # One connection per test (its transaction): the cache's own autocommit connection, which
    # production uses for the throttle's counters, is routed back onto the default here.
    from django.db import router

    settings.DATABASE_ROUTERS = []
    router.__dict__.pop("routers", None)
    _test_broker_start()
    if CITUS_RUN:
        _citus_configure()


_test_broker: subprocess.Popen[bytes] | None = None


def _test_broker_start() -> None:
    """The broker of this test run (unless CELERY_BROKER_URL names one): an embedded Valkey of
    its own under KINDMEM_DATA_DIR/test-broker (not the one a `kindmem run` of this checkout
    may be serving), where the test process queues what a committed transaction sends.

    It is also the Redis of the tests that need one, where KINDMEM_TEST_REDIS_URL names none
    (CI names its own): one rule, so a fresh machine runs every test CI runs."""
    global _test_broker
    from config import broker
    from config.celery import app

    if not broker.is_embedded_url(settings.CELERY_BROKER_URL):
        return
    data_dir = settings.DATA_DIR / "test-broker"
    url = broker.embedded_broker_url(data_dir)
    settings.CELERY_BROKER_URL = app.conf.broker_url = url
    if not broker.answers(url):
        shutil.rmtree(data_dir, ignore_errors=True)  # nothing queued by an earlier run
        _test_broker = broker.broker_start(data_dir=data_dir)
    # Kombu's own Redis transport (production's) on the same server, in a database of its own
    # (what the test process queues goes unread into database 0)
    redis_url = url.replace(broker.SCHEME, "redis+socket://") + "?virtual_host=15"
    os.environ.setdefault("KINDMEM_TEST_REDIS_URL", redis_url)


# What makes a test slow: it starts processes (a web server, a worker, a browser, `kindmem
# run`). `pytest -m "not slow"` is the fast suite; CI runs everything.
SLOW_FIXTURES = {"browser", "page", "live_server", "worker_broker", "server"}
SLOW_IMPORTS = ("import subprocess", "from tests.processes import", "from tests import processes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spawning: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in spawning:
            source = path.read_text()
            spawning[path] = any(line in source for line in SLOW_IMPORTS)
        if spawning[path] or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    _citus_select(config, items)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _citus_overrides is not None:
        _citus_overrides.disable()
    if _test_broker is not None:
        _test_broker.terminate()
        _test_broker.wait(timeout=30)


# The Citus run (`KINDMEM_TEST_CITUS=1 pytest -m citus`, which `make test` runs after the suite
# wherever a Citus build is at hand): Django's connection on the coordinator of a live cluster of
# one coordinator and two workers, which the session starts (tests/citus_cluster.py) and
# migrates with `migrate`, as an operator's `manage.py migrate` does. Only the tests marked
# `citus` run then: those of the modules and folders below (paths from the repository).
CITUS_RUN = os.environ.get("KINDMEM_TEST_CITUS") == "1"
# ...but these, which test what is off on Citus by design: prepared statements (none, as
# behind a transaction-mode pooler), and session-level tenant settings (Citus has only the
# transaction-local ones).
CITUS_EXCLUDED = ("tests/facts/search/test_search_prepared.py",)
CITUS_EXCLUDED_PARAMETERS = ("session-settings",)
CITUS_TESTS = (
    "tests/citus/",
    "tests/test_distribution.py",
    "tests/hardening/test_access_e2e.py",
    "tests/privacy/test_erasure_holes.py",
    "tests/privacy/test_erasure.py",
    "tests/facts/search/",
    "tests/recall/test_recall.py",
    "tests/runlog/test_chain.py",
    "tests/runlog/test_api.py",
)
# ...of which these read what only a cluster has (Citus' catalog, its plans): skipped elsewhere.
CLUSTER_ONLY = ("tests/citus/",)

# What kindmem runs with on Citus (KINDMEM_CITUS=1, config/settings_database.py), set for the
# whole run: settings.CITUS, and with it KINDMEM_TRANSACTION_POOLING's every request one
# transaction and no prepared statements. Django's settings are loaded before this file is, so
# what KINDMEM_CITUS changes at load time is set here (and the logins' options by
# tests/citus_cluster.py's django_moved_to; the throttle's Redis cache by django_db_setup). The
# processes a test starts get KINDMEM_CITUS itself (tests/processes.py's database_env).
CITUS_SETTINGS: dict[str, Any] = {
    "CITUS": True,
    "TRANSACTION_POOLING": True,
    "PREPARED_STATEMENTS": False,
}

_citus_overrides: override_settings | None = None


def _citus_configure() -> None:
    """Check that the Citus run can start a cluster, and set CITUS_SETTINGS."""
    global _citus_overrides
    from django.test.utils import override_settings

    from tests import citus_cluster

    if citus_cluster.citus_bin() is None:
        raise pytest.UsageError(
            "KINDMEM_TEST_CITUS=1 but no Citus build: set KINDMEM_CITUS_BIN to one's bin/, or"
            " build one (build.sh of the Citus source folder, run from the repository)"
        )
    if citus_cluster.citus_source() is None:
        raise pytest.UsageError(
            "KINDMEM_TEST_CITUS=1 but no Citus source folder (cluster.sh): KINDMEM_CITUS_SOURCE"
        )
    _citus_overrides = override_settings(**CITUS_SETTINGS)
    _citus_overrides.enable()


def _citus_select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the Citus tests `citus`; on the cluster deselect every other test, elsewhere the
    cluster's own (they read Citus's catalog and plans: `make test` runs them on the cluster)."""
    kept, dropped = [], []
    for item in items:
        nodeid = item.nodeid  # the path from the repository, then "::test[params]"
        on_citus = (
            nodeid.startswith(CITUS_TESTS)
            and not nodeid.startswith(CITUS_EXCLUDED)
            and not any(f"-{p}]" in nodeid for p in CITUS_EXCLUDED_PARAMETERS)
        )
        if on_citus:
            item.add_marker(pytest.mark.citus)
        if (CITUS_RUN and not on_citus) or (not CITUS_RUN and nodeid.startswith(CLUSTER_ONLY)):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


if CITUS_RUN:

    @pytest.fixture(scope="session")
    def django_db_setup(django_test_environment: None, django_db_blocker: Any) -> Iterator[Cluster]:
        """The Citus run's database, in place of pytest-django's test database: a fresh
        cluster's coordinator, with the app role (which reaches the workers), migrated."""
        from django.core.management import call_command
        from django.db import connections
        from django.test.utils import override_settings

        from tests import citus_cluster
        from tests.processes import cache_url

        bin_dir = citus_cluster.citus_bin()
        assert bin_dir is not None  # _citus_configure said so
        with citus_cluster.cluster_running(bin_dir) as cluster:
            citus_cluster.app_role_create(cluster, str(settings.KINDMEM_APP_ROLE))
            with django_db_blocker.unblock():
                citus_cluster.django_moved_to(cluster)
                # with the suite's database cache, whose table tests/test_distribution.py names
                call_command("migrate", interactive=False, verbosity=0)
                # Then as the app role: Citus opens a transaction's connections to the workers
                # as its current user, and a second user's connections do not see what the
                # first wrote in the same transaction (a test's own rows, say), so the suite's
                # switch from its login to the app role (kindmem/row_security.py) would hide
                # them. The tests' own rows are written with every tenant in sight
                # (`_citus_every_tenant`).
                citus_cluster.django_moved_to(cluster, str(settings.KINDMEM_APP_ROLE))
            # then the write throttle counts in Redis, as KINDMEM_CITUS has it (KINDMEM_CACHE_URL)
            redis = {"BACKEND": "django.core.cache.backends.redis.RedisCache"}
            try:
                with override_settings(CACHES={"default": {**redis, "LOCATION": cache_url()}}):
                    yield cluster
            finally:
                with django_db_blocker.unblock():
                    connections.close_all()


def _uses_database(request: pytest.FixtureRequest) -> bool:
    """Whether the test has pytest-django's database: by its marker, or by a fixture."""
    return request.node.get_closest_marker("django_db") is not None or bool(
        {"db", "transactional_db", "live_server"} & set(request.fixturenames)
    )


def _transactional(request: pytest.FixtureRequest) -> bool:
    """Whether pytest-django runs the test as a TransactionTestCase (flushed after it)."""
    from pytest_django.fixtures import validate_django_db

    marker = request.node.get_closest_marker("django_db")
    return (marker is not None and validate_django_db(marker)[0]) or bool(
        {"transactional_db", "live_server"} & set(request.fixturenames)
    )


@pytest.fixture(autouse=True)
def _citus_every_tenant(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the Citus run, a test's own statements (its fixtures' rows, its checks) run with every
    tenant's rows in sight, as the suite's superuser login sees them elsewhere; what the code
    under test runs enters its own tenant and comes back to this (row_security.tenant_context),
    all in the test's transaction. (A transactional test logs in as the superuser:
    `_citus_login`.)"""
    if not CITUS_RUN or not _uses_database(request) or _transactional(request):
        yield
        return
    from kindmem import row_security

    request.getfixturevalue("db")
    token = row_security._tenant.set(row_security.ALL_TENANTS)
    row_security._apply(row_security.ALL_TENANTS)
    try:
        yield
    finally:  # (the settings end with the test's transaction)
        row_security._tenant.reset(token)


if CITUS_RUN:

    @pytest.fixture
    def _django_db_helper(_citus_login: None, _django_db_helper: None) -> None:
        """pytest-django's database set-up of a test (its transaction, or the flush after a
        transactional test) inside the login `_citus_login` chooses for the test."""

    @pytest.fixture
    def _citus_login(request: pytest.FixtureRequest, django_db_setup: Cluster) -> Iterator[None]:
        """A transactional test logs in as the superuser, as it does elsewhere: each of its
        statements commits on its own, so its rows and its requests' (as the app role) never
        share a transaction, and the flush after it may TRUNCATE, which the app role may not."""
        from tests import citus_cluster

        if not _transactional(request):
            yield
            return
        citus_cluster.django_moved_to(django_db_setup, citus_cluster.SUPERUSER)
        try:
            yield
        finally:
            citus_cluster.django_moved_to(django_db_setup, str(settings.KINDMEM_APP_ROLE))


@pytest.fixture(scope="session")
def citus(django_db_setup: Cluster | None) -> Cluster:
    """The Citus run's cluster (its nodes' ports, for queries outside Django's connection).
    Only the Citus run collects the tests that ask for it (`_citus_select`)."""
    if django_db_setup is None:
        raise pytest.UsageError("the `citus` fixture needs the Citus run: KINDMEM_TEST_CITUS=1")
    return django_db_setup


@pytest.fixture
def worker_broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker of the test's own, for a real worker process it starts (tests/processes.py)."""
    from tests.processes import embedded_broker

    with embedded_broker(tmp_path) as started:
        yield started


# Port 1 of the loopback: nothing listens there, so a connection is refused at once.
DEAD_BROKER_URL = "redis://127.0.0.1:1/0"


@pytest.fixture
def dead_broker() -> Iterator[str]:
    """The Celery app's broker moved to an address where nothing listens, for real: every
    publish of the test goes through Kombu's connection and its retries, and fails. (Tests
    outside a transactional database never publish: their transaction never commits.)"""
    from config.celery import app

    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url = DEAD_BROKER_URL
    app._pool = app.amqp._producer_pool = None  # the pools of the live broker's connections
    try:
        yield DEAD_BROKER_URL
    finally:  # (the dead broker's pools stay in Kombu's registry, for the next such test)
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


# What a request may add while the broker is down: the request publish policy's retries
# (REQUEST_PUBLISH_RETRY_POLICY, ~0.3 s on a refused connection) and the request's own work on a
# busy machine. The global publish policy (~4 s, for a broker restart) exceeds it.
DEAD_BROKER_WITHIN_SECONDS = 2.0


def publish_warned(caplog: pytest.LogCaptureFixture, task_name: str, object_id: object) -> bool:
    """Whether api/background.py warned that it could not queue `task_name` for the id."""
    return any(
        r.name == "api.background"
        and r.levelname == "WARNING"
        and task_name in r.getMessage()
        and str(object_id) in r.getMessage()
        for r in caplog.records
    )


@pytest.fixture
def eager_tasks() -> Iterator[Callable[[], None]]:
    """A switch: once called, tasks queued in the test run at once, in this process (a sweep's
    messages, for a test that runs the sweep itself). Off again when the test ends."""
    from config.celery import app

    def switch_on() -> None:
        app.conf.task_always_eager = True

    try:
        yield switch_on
    finally:
        app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def _fresh_query_cache() -> Iterator[None]:
    """Each test starts with no cached query vectors: tests script their embedders' answers,
    and one test's vector for a text must not answer another's search."""
    from embeddings.providers import query_cache

    query_cache.cache_clear()
    yield
    query_cache.cache_clear()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@dataclass
class World:
    """One tenant with an org, a project, a member user, an agent and keys of every kind."""

    tenant: object
    org: object
    project: object
    user: object
    agent: object
    admin: factories.Keyed
    app: factories.Keyed
    user_key: factories.Keyed


def world_create(name: str | None = None) -> World:
    """A tenant (named `name`, or a fresh name) with its org, project, member user, agent and
    keys: what the `world` and `other_world` fixtures hold."""
    tenant = factories.tenant_create(name)
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org)
    user = factories.user_create(tenant, projects=[project])
    agent = factories.agent_create(tenant)
    return World(
        tenant=tenant,
        org=org,
        project=project,
        user=user,
        agent=agent,
        admin=factories.admin_key_create(tenant),
        app=factories.app_key_create(tenant, [project]),
        user_key=factories.user_key_create(user),
    )


@pytest.fixture
def world(db: None) -> World:
    """A tenant with an org, a project, a member user, an agent and keys of every kind."""
    return world_create()


@pytest.fixture
def other_world(db: None) -> World:
    """A second tenant, to prove nothing crosses between tenants."""
    return world_create()


CHROMIUM = os.environ.get("KINDMEM_CHROMIUM", "/usr/bin/chromium")


# Per module, not per session: Playwright's sync API leaves its event loop marked running in
# this thread while it is open, and every later test that runs async code here (async_to_sync,
# the MCP and async client tests) would then fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium (Debian's package) driven by Playwright, for the console's tests."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # between browser steps are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()


def console_login(page: Page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/console/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")


# Screenshots the browser tests take, to look at by eye (gitignored with the rest of var/).
ARTEFACTS = Path(settings.BASE_DIR) / "var" / "test-artefacts"


def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as var/test-artefacts/<name>.png and return its path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
