"""Names, not ids (console/names.py): what a console page names is looked up once per
kind for the whole page, from the staff member's tenant only, and linked to its page only
where their role opens it."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.names import Names, principal_parts
from console.tenant_wall import principal_names
from tests import factories
from tests.console.conftest import fact_history_plant, staff_create

pytestmark = pytest.mark.django_db


def request_of(user: object) -> object:
    request = RequestFactory().get("/console/")
    request.user = user
    return request


def test_principal_strings_name_what_they_may_be() -> None:
    assert principal_parts("staff:u-1") == [("person", "user:u-1")]
    assert principal_parts("user:u-1") == [("person", "user:u-1"), ("key", "u-1")]
    assert principal_parts("service:app:k-1") == [("key", "k-1")]
    assert principal_parts("admin:k-1") == [("key", "k-1")]
    assert principal_parts("agent:support-bot") == [("agent", "support-bot")]
    assert principal_parts("run:r-1") == [("run", "r-1")]
    assert principal_parts("expiry-sweep") == []
    assert principal_parts("policy:cap-cull") == []


def test_a_page_of_many_principals_costs_one_query_per_kind(world) -> None:
    # given ten people, ten keys and ten runs a page names
    users = [factories.user_create(world.tenant) for _ in range(10)]
    keys = [factories.admin_key_create(world.tenant).key for _ in range(10)]
    runs = [factories.run_create(world.app, world.project).run for _ in range(10)]
    principals = [
        *(f"staff:{u.pk}" for u in users),
        *(f"admin:{k.pk}" for k in keys),
        *(f"run:{r.pk}" for r in runs),
    ]
    names = Names(request_of(staff_create(world, "names", "superuser")))
    names.want_all("principal", principals)
    # when the page shows each of them
    with CaptureQueriesContext(connection) as queries:
        shown = [names.link("principal", p) for p in principals]
        again = [names.link("principal", p) for p in principals]
    # then each kind was looked up once: people, keys, runs (and their agents with them)
    assert len(queries) == 3
    assert shown == again
    assert all(u.username in link for u, link in zip(users, shown[:10], strict=True))
    assert 'title="staff:' in shown[0]


def test_another_tenants_rows_and_garbage_are_shown_as_the_ids_they_are(world, other_world):
    # given staff of tenant A, and a user and a key of tenant B
    stranger = factories.user_create(other_world.tenant)
    names = Names(request_of(staff_create(world, "names", "superuser")))
    values = [f"staff:{stranger.pk}", f"app:{other_world.app.key.pk}", "run:not-a-uuid", "erased"]
    names.want_all("principal", values)
    # then none is named: each is its own string, as text, no link
    for value in values:
        link = names.link("principal", value)
        assert stranger.username not in link
        assert "href" not in link
        assert f">{value}<" in link
    assert principal_names(names.request, values) == {}


def test_names_link_only_to_the_pages_the_staff_members_role_opens(world):
    # given a run of the agent, and a reviewer (who opens no run log, agent or key page)
    minted = factories.run_create(world.app, world.project, agent=world.agent)
    reviewer = staff_create(world, "names", "reviewer")
    superuser = staff_create(world, "names", "superuser")
    for user, linked in ((reviewer, False), (superuser, True)):
        names = Names(request_of(user), tenant_id=world.tenant.id)
        run = names.link("run", minted.run.pk)
        agent = names.link("principal", f"agent:{world.agent.agent_id}")
        key = names.link("principal", f"service:app:{world.app.key.pk}")
        person = names.link("person", "participant:participant-1")
        # then each is named, and linked where the role opens the page
        assert "a run of support-bot" in run
        assert ">support-bot<" in agent
        assert "app (app key)" in key
        timeline = reverse("admin:runlog_logentry_timeline", args=[minted.run.pk])
        assert (timeline in run) is linked
        assert (reverse("admin:kindmem_agent_change", args=[world.agent.pk]) in agent) is linked
        assert ("href" in key) is linked
        assert f"{reverse('admin:privacy_person')}?subject=participant%3Aparticipant-1" in person


# The console's lists of rows that name someone or something: each shows names, and costs the
# same queries for a page of two rows as for a page of twenty.
NAMING_LISTS = [
    "facts_fact",
    "facts_revision",
    "facts_subject",
    "facts_link",
    "audit_auditevent",
    "runlog_logentry",
    "kindmem_run",
]


def list_queries(client: Client, name: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200, name
    return len(queries), response.content.decode()


def test_the_lists_name_their_rows_in_the_same_queries_for_few_rows_and_many(api, world):
    # given a short fact history, and a reviewer who opened its page
    few = fact_history_plant(api, world, changes=1, links=1, participant="p-few")
    client = Client()
    client.force_login(staff_create(world, "lists", "superuser"))
    client.get(reverse("admin:facts_fact_change", args=[few.fact_id]))
    for name in NAMING_LISTS:  # the session, content types and permissions, cached
        client.get(reverse(f"admin:{name}_changelist"))
    costs = {name: list_queries(client, name)[0] for name in NAMING_LISTS}
    # when there are many more rows of each, written by the same kinds of principals
    many = fact_history_plant(api, world, changes=10, links=6, participant="p-many")
    client.get(reverse("admin:facts_fact_change", args=[many.fact_id]))
    # then every list costs what it cost, and names its rows
    pages = {}
    for name in NAMING_LISTS:
        count, pages[name] = list_queries(client, name)
        assert count == costs[name], name
    assert ">Support Bot<" in pages["facts_revision"]
    assert f">{many.reviewer.username}<" in pages["facts_revision"]
    assert ">app (app key)<" in pages["facts_link"]
    assert 'title="staff:' in pages["audit_auditevent"]
    assert f">{many.reviewer.username} (key u)<" in pages["audit_auditevent"]
    assert "a run of Support Bot" in pages["runlog_logentry"]
    for name, html in pages.items():
        text = re.sub(r"<[^>]+>", " ", html)
        for an_id in (many.reviewer.pk, many.run.pk, world.app.key.pk):
            assert str(an_id) not in text, (name, an_id)


def test_the_person_page_names_who_read_decided_and_ran_with_links(api, world):
    # given p-ada's fact history, whose page a reviewer opened
    history = fact_history_plant(api, world, changes=1, links=1)
    reviewer = Client()
    reviewer.force_login(history.reviewer)
    reviewer.get(reverse("admin:facts_fact_change", args=[history.fact_id]))
    officer = Client()
    officer.force_login(staff_create(world, "names", "superuser"))
    # when staff open her person page
    html = officer.get(
        f"{reverse('admin:privacy_person')}?subject=participant:p-ada"
    ).content.decode()
    # then who read her data and who decided are named, linked to their own pages
    reads = html.split('id="person-reads"')[1].split("</section>")[0]
    reviewer_page = f"{reverse('admin:privacy_person')}?subject=user%3A{history.reviewer.pk}"
    assert f'href="{reviewer_page}' in reads
    assert f">{history.reviewer.username}<" in reads
    decided = html.split('id="person-approvals"')[1].split("</section>")[0]
    assert f">{history.reviewer.username}<" in decided
    # and her facts, runs, agents and projects are named and linked too
    assert f'href="{reverse("admin:facts_fact_change", args=[history.fact_id])}"' in html
    runs = html.split('id="person-runs"')[1].split("</section>")[0]
    assert reverse("admin:runlog_logentry_timeline", args=[history.run.pk]) in runs
    assert "a run of Support Bot" in runs
    assert reverse("admin:kindmem_project_change", args=[world.project.pk]) in runs
    text = re.sub(r"<[^>]+>", " ", html)
    for an_id in (history.reviewer.pk, history.run.pk, world.project.pk):
        assert str(an_id) not in text


def test_a_console_url_reversed_once_is_the_url_django_reverses(world):
    # console.names.url_of reverses each pattern once and fills in the id
    import uuid

    from django.urls import reverse

    from console.names import url_of

    for viewname in ("admin:facts_fact_change", "admin:runlog_logentry_timeline"):
        for pk in (uuid.uuid4(), uuid.uuid4()):
            assert url_of(viewname, pk) == reverse(viewname, args=[pk])
