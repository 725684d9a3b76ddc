"""`manage.py verify_runlog`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests import factories
from tests.runlog.conftest import log_entry_append, sql


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("verify_runlog", *args, stdout=out)
    return out.getvalue()


def test_it_prints_each_run_and_passes_when_every_chain_verifies(world, other_world, minted, five):
    theirs = factories.run_create(other_world.app, other_world.project)
    log_entry_append(theirs)

    output = run_command()

    assert f"ok    {world.tenant.name} run {minted.run.id}: 5 entries" in output
    assert f"run {theirs.run.id}: 1 entries" in output
    assert "2 runs checked, 0 failed" in output


@pytest.mark.parametrize("by", ["name", "id"])
def test_it_checks_one_tenant_by_name_or_id(world, other_world, minted, five, by):
    theirs = factories.run_create(other_world.app, other_world.project)
    log_entry_append(theirs)

    output = run_command("--tenant", str(getattr(world.tenant, by)))

    assert str(minted.run.id) in output
    assert str(theirs.run.id) not in output


def test_it_fails_and_names_the_broken_run_and_sequence(world, minted, five):
    sql("UPDATE runlog_logentry SET payload = '{}' WHERE id = %s", [five[3].id])
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("verify_runlog", stdout=out)

    assert failed.value.returncode == 1
    assert f"FAIL  {world.tenant.name} run {minted.run.id}: 5 entries, first bad sequence 4" in (
        out.getvalue()
    )


def test_an_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant"):
        run_command("--tenant", "nobody")
