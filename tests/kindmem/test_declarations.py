"""An agent's memory declarations and tools: what a valid list is, and that the console's
form refuses an invalid one."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from kindmem.declarations import parse, validate_memory_declarations
from tests import factories

GOOD = [
    {"type": "preference", "scope": "participant", "keep_days": 90},
    {"type": "team-fact", "scope": "same-project", "keep_days": 1},
]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"type": "x"}, "Must be a list"),
        (["preference"], "must be an object"),
        ([{"type": "", "scope": "user", "keep_days": 1}], "type must be a name"),
        ([{"type": "a b", "scope": "user", "keep_days": 1}], "type must be a name"),
        ([{"type": "x", "scope": "everyone", "keep_days": 1}], "scope must be one of"),
        ([{"type": "x", "scope": "user", "keep_days": 0}], "keep_days must be"),
        ([{"type": "x", "scope": "user", "keep_days": "30"}], "keep_days must be"),
        ([{"type": "x", "scope": "user", "keep_days": True}], "keep_days must be"),
        ([{"type": "x", "scope": "user"}], "keep_days must be"),
        ([{"type": "x", "scope": "user", "keep_days": 1, "trust": "verified"}], "unknown keys"),
        ([GOOD[0], GOOD[0]], "declared twice"),
    ],
)
def test_an_invalid_declaration_list_is_refused_naming_the_problem(value, problem):
    with pytest.raises(ValidationError) as raised:
        validate_memory_declarations(value)
    assert any(problem in message for message in raised.value.messages)
    # and the remember path reads it as declaring nothing
    assert parse(value) == {}


def test_a_valid_list_parses_by_type():
    validate_memory_declarations(GOOD)
    declared = parse(GOOD)
    assert sorted(declared) == ["preference", "team-fact"]
    assert declared["team-fact"].is_wide
    assert not declared["preference"].is_wide


def test_the_agent_model_validates_declarations_and_tools_on_full_clean(db):
    agent = factories.agent_create(factories.tenant_create())
    agent.memory_declarations = GOOD
    agent.tools = ["send_email"]
    agent.full_clean()
    agent.memory_declarations = [{"type": "x", "scope": "galaxy", "keep_days": 1}]
    agent.tools = ["not a tool name"]
    with pytest.raises(ValidationError) as raised:
        agent.full_clean()
    assert set(raised.value.message_dict) >= {"memory_declarations", "tools"}


def test_the_console_refuses_to_save_invalid_declarations(client, django_user_model, db):
    # given a superuser in the console, and an agent
    admin = django_user_model.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    agent = factories.agent_create(factories.tenant_create())
    url = f"/console/kindmem/agent/{agent.id}/change/"
    form = {
        "tenant": str(agent.tenant_id),
        "agent_id": agent.agent_id,
        "version": agent.version,
        "name": "",
        "tools": "[]",
    }
    # when the declarations are edited into an invalid shape
    response = client.post(
        url, {**form, "memory_declarations": '[{"type": "x", "scope": "galaxy", "keep_days": 1}]'}
    )
    # then the form shows the problem and nothing is saved
    assert response.status_code == 200
    assert "scope must be one of" in response.content.decode()
    agent.refresh_from_db()
    assert agent.memory_declarations == []
    # and a valid edit saves
    response = client.post(
        url, {**form, "memory_declarations": '[{"type": "x", "scope": "tenant", "keep_days": 7}]'}
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.memory_declarations == [{"type": "x", "scope": "tenant", "keep_days": 7}]
