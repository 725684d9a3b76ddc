from __future__ import annotations

from kindmem.access import Readers, readers_for
from tests import factories


def test_tenant_admin_reads_everything(world):
    assert readers_for(world.admin.principal) == Readers(all=True)


def test_user_reads_its_projects_orgs_and_itself_but_no_participants(world):
    other_org = factories.org_create(world.tenant)
    world.user.orgs.add(other_org)
    readers = readers_for(world.user_key.principal)
    assert readers == Readers(
        project_ids=frozenset({str(world.project.id)}),
        org_ids=frozenset({str(world.org.id), str(other_org.id)}),
        user_ids=frozenset({str(world.user.id)}),
    )


def test_app_reads_on_behalf_of_all_end_users_of_its_projects(world):
    readers = readers_for(world.app.principal)
    assert readers == Readers(
        project_ids=frozenset({str(world.project.id)}),
        org_ids=frozenset({str(world.org.id)}),
        on_behalf_of_project_ids=frozenset({str(world.project.id)}),
    )


def test_run_reads_only_its_own_containers(world):
    minted = factories.run_create(world.app, world.project, participant_id="p-1", thread_id="t-1")
    assert readers_for(minted.principal) == Readers(
        project_ids=frozenset({str(world.project.id)}),
        org_ids=frozenset({str(world.org.id)}),
        participant_ids=frozenset({"p-1"}),
        thread_ids=frozenset({"t-1"}),
    )


def test_a_users_run_reads_only_its_own_containers(world):
    minted = factories.run_create(world.user_key, world.project, user=world.user, thread_id="t-2")
    assert readers_for(minted.principal) == Readers(
        project_ids=frozenset({str(world.project.id)}),
        org_ids=frozenset({str(world.org.id)}),
        user_ids=frozenset({str(world.user.id)}),
        thread_ids=frozenset({"t-2"}),
    )


def test_run_without_a_person_or_thread_grants_none_of_them(world):
    minted = factories.run_create(world.app, world.project, participant_id=None, thread_id=None)
    readers = readers_for(minted.principal)
    assert readers.participant_ids == frozenset()
    assert readers.thread_ids == frozenset()
    assert readers.user_ids == frozenset()
    assert readers.on_behalf_of_project_ids == frozenset()


def test_readers_never_cross_tenants(world, other_world):
    # an app key of another tenant listing this tenant's project would still not read it
    readers = readers_for(other_world.app.principal)
    assert str(world.project.id) not in readers.project_ids
