"""The Python client's audit methods against the real app (in-process, as
test_python_client_flows.py): the seed's type and scope criteria, the most recent events without
a cursor."""

from __future__ import annotations

import pytest

from tests.clients.conftest import wsgi_client

# A request's end keeps this test's connection (conftest.py).
pytestmark = [pytest.mark.usefixtures("keep_the_tests_connection")]


@pytest.mark.django_db
def test_the_audit_stream_filters_by_type_and_scope_and_tails_without_a_cursor(world):
    project = str(world.project.id)
    with wsgi_client(world.admin.token) as admin:
        # given writes of two types into two participants' scopes
        app = admin.with_token(world.app.token)
        for type_, participant in (("note", "p-1"), ("preference", "p-1"), ("note", "p-2")):
            app.create_fact(
                type=type_,
                content=f"{type_} of {participant}",
                scope={"project_id": project, "participant_id": participant},
            )
        # when the admin asks for p-1's notes
        page = admin.list_audit(type="note", project_id=project, participant_id="p-1")
        # then only that write comes, naming its target
        [event] = page["events"]
        [target] = event["targets"]
        assert target["type"] == "note"
        assert (target["scope"]["project_id"], target["scope"]["participant_id"]) == (
            project,
            "p-1",
        )
        # and without a cursor, a limit is the most recent events, oldest first
        newest = admin.list_audit(limit=2)["events"]
        everything = list(admin.iter_audit())
        assert [e["seq"] for e in newest] == [e["seq"] for e in everything[-2:]]
        # and every page of a filtered iteration is the filter's
        assert [e["seq"] for e in admin.iter_audit(page_size=1, participant_id="p-2")] == [
            everything[-1]["seq"]
        ]
