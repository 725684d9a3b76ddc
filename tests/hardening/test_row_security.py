"""Row-level security, the second wall: what holds even when the Python tenant filter is gone.

The suite logs in as the migration role (the tables' owner, a superuser of the embedded
server, which row security does not confine); every request and task switches to the app role
as production's web and worker processes are (kindmem/row_security.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.db import DatabaseError, connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.durability import login_problems
from facts import views as fact_views
from facts.models import Fact, Revision
from kindmem.models import Org
from kindmem.row_security import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db

# The one table with a tenant_id that row security leaves to the Python guard: the login table
# is read before any tenant is known, and platform superusers belong to none.
OUTSIDE_THE_WALL = {"kindmem_user"}


def tenant_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]


def tenant_models() -> list[Any]:
    return [
        model
        for model in apps.get_models()
        if any(f.column == "tenant_id" for f in model._meta.concrete_fields)
        and model._meta.db_table not in OUTSIDE_THE_WALL
    ]


def create_fact(keyed: Any, text: str) -> Fact:
    from facts import services

    result = services.fact_create(
        principal=keyed.principal, type="note", content=text, scope={}, tags=[]
    )
    return result.revision.fact


def test_every_tenant_table_forces_row_security_with_the_tenant_policy() -> None:
    # given: every table of the schema with a tenant_id column (a new one included)
    tables = [t for t in tenant_tables() if t not in OUTSIDE_THE_WALL]
    assert {"facts_revision", "audit_auditevent"} <= set(tables)

    # when: the catalog is asked how each is protected
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
            " (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid"
            "  AND p.polname = 'tenant_isolation')"
            " FROM pg_class c WHERE c.relname = ANY(%s)",
            [tables],
        )
        protection = {name: rest for name, *rest in cursor.fetchall()}

    # then: each has row security enabled and forced, with the tenant policy
    assert protection == {table: [True, True, 1] for table in tables}


def test_the_app_role_owns_nothing_and_cannot_bypass_row_security() -> None:
    # the suite's own login (the owner) is what the start-up check refuses to serve with
    assert login_problems() != []
    with tenant_context(None):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user")
            assert cursor.fetchone()[0] == django_settings.KINDMEM_APP_ROLE
        assert login_problems() == []
        # nor can it switch the wall off
        for statement in (
            "ALTER TABLE facts_revision DISABLE ROW LEVEL SECURITY",
            "DROP POLICY tenant_isolation ON facts_revision",
            "TRUNCATE facts_revision",
        ):
            with pytest.raises(DatabaseError), transaction.atomic():
                connection.cursor().execute(statement)


def test_without_the_tenant_setting_no_row_is_visible(world, other_world) -> None:
    # given: two tenants with facts (and everything their fixtures made: orgs, keys, agents)
    create_fact(world.admin, "world's")
    create_fact(other_world.admin, "other world's")
    assert Fact.objects.count() == 2  # the owner sees both

    # when: a query runs as the app role before any tenant is set
    with tenant_context(None):
        visible = {model._meta.db_table: model.objects.count() for model in tenant_models()}

    # then: no table shows a single row
    assert visible == {model._meta.db_table: 0 for model in tenant_models()}


def test_a_forgotten_tenant_filter_still_cannot_cross_tenants(
    api, world, other_world, monkeypatch
) -> None:
    # given: facts of two tenants, and a bug: the list's guard lost its tenant and reader
    # filters in Python
    mine = create_fact(other_world.admin, "other world's")
    create_fact(world.admin, "world's secret")

    def readable_revisions_without_any_filter(principal: Any, *_: Any, **__: Any) -> Any:
        return Revision.objects.select_related("fact").prefetch_related("subjects")

    monkeypatch.setattr(fact_views, "readable_revisions", readable_revisions_without_any_filter)
    assert readable_revisions_without_any_filter(None).current().count() == 2  # the bug is real

    # when: the other tenant lists its facts through the API
    response = api.get("/v1/facts", **other_world.admin.headers)

    # then: only its own fact comes back: the database held the line
    assert response.status_code == 200, response.json()
    assert [f["id"] for f in response.json()["facts"]] == [str(mine.id)]


def test_a_write_into_another_tenant_is_refused(world, other_world) -> None:
    # given: a connection confined to the world's tenant
    with tenant_context(world.tenant.id):
        # when: a bug writes a row for the other tenant
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            Org.objects.create(tenant_id=other_world.tenant.id, name="planted")
        # then: refused; its own tenant's row is fine
        Org.objects.create(tenant_id=world.tenant.id, name="legit")
    assert not Org.objects.filter(name="planted").exists()
    assert Org.objects.filter(name="legit").exists()


def test_an_unknown_credential_enters_no_tenant(api, world) -> None:
    # a well-formed key that no tenant has is refused, and saw nothing on the way
    response = api.get("/v1/facts", HTTP_AUTHORIZATION="Bearer kmk_unknownprefix_" + "x" * 40)
    assert response.status_code == 401


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(owners=st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=12))
def test_the_sql_wall_equals_the_python_reference(db, owners: list[int]) -> None:
    # given: facts spread over three tenants as hypothesis chooses
    with transaction.atomic():
        tenants = [factories.tenant_create() for _ in range(3)]
        facts = [factories.fact_create(tenants[i]) for i in owners]
        for tenant in [*tenants, None]:
            # when: each tenant (and none) lists every fact with no filter at all
            with tenant_context(tenant.id if tenant else None):
                visible = set(Fact.objects.values_list("id", flat=True))
            # then: exactly the facts the Python reference gives that tenant
            assert visible == {f.id for f in facts if tenant and f.tenant_id == tenant.id}
        transaction.set_rollback(True)


@pytest.mark.parametrize(
    ("query", "index"),
    [
        (
            "SELECT id FROM facts_revision"
            " WHERE search_vector @@ websearch_to_tsquery('english', 'green tea')",
            "revision_search_gin",
        ),
        (
            "SELECT id FROM recall_message WHERE search @@ websearch_to_tsquery('english', 'tea')",
            "message_search_gin",
        ),
        ("SELECT id FROM facts_fact WHERE tags @> ARRAY['diet']::varchar[]", "fact_tags_gin"),
        (
            "SELECT seq FROM audit_auditevent WHERE subjects && ARRAY['participant:p']::varchar[]",
            "audit_subjects",
        ),
    ],
)
def test_keyword_search_and_tag_filters_keep_their_indexes_behind_the_wall(
    world, query: str, index: str
) -> None:
    # given: the app role confined to a tenant, and scans made as costly as the planner allows
    with tenant_context(world.tenant.id), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            # when: the planner plans a keyword search or a tag filter
            cursor.execute("EXPLAIN " + query)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    # then: it uses the GIN index (an operator that is not LEAKPROOF could not, under row
    # security, and every keyword search would read the whole table)
    assert index in plan, plan
