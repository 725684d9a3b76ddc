"""Every JSON body is held to one nesting depth (api/parsers.py's MAX_JSON_DEPTH) before it
is parsed: a deeper one is the same 400 and writes nothing, whatever the stack the request is
parsed on; one at the limit is parsed and written, however deep the stack under it."""

from __future__ import annotations

import json

import pytest

from api.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from facts.models import Fact
from tests.stacks import STACKS, under

pytestmark = pytest.mark.django_db

REFUSED = {
    "code": "validation-error",
    "message": f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.",
    "details": None,
}


def fact_body(depth: int) -> str:
    """A fact write whose body nests `depth` levels: the object itself, its content, arrays."""
    arrays = depth - 2
    return '{"type": "note", "content": {"a": ' + "[" * arrays + "]" * arrays + "}}"


def test_the_depth_is_counted_in_arrays_and_objects_alike():
    assert not json_depth_exceeds("[" * 256 + "]" * 256)
    assert json_depth_exceeds("[" * 257 + "]" * 257)
    assert json_depth_exceeds('{"a": ' * 257 + "1" + "}" * 257)
    assert not json_depth_exceeds(json.dumps([[[]]] * 1000))  # many brackets, shallow


def test_brackets_inside_strings_do_not_nest():
    # escaped quotes and backslashes do not end the string early
    text = json.dumps({"t": '\\"' + "[{" * 1000, "u": ["\\", "[" * 300]})
    assert not json_depth_exceeds(text)


@pytest.mark.parametrize("stack", STACKS)
def test_a_body_deeper_than_the_limit_is_the_same_400_at_any_stack(api, world, stack):
    for depth in (MAX_JSON_DEPTH + 1, 900, 100_000):
        response = under(
            stack,
            lambda depth=depth: api.generic(
                "POST", "/v1/facts", fact_body(depth), "application/json", **world.app.headers
            ),
        )
        assert response.status_code == 400, depth
        assert response.json() == REFUSED, depth
    assert not Fact.objects.exists()


@pytest.mark.parametrize("stack", STACKS)
def test_a_body_at_the_limit_is_written_at_any_stack(api, world, stack):
    response = under(
        stack,
        lambda: api.generic(
            "POST", "/v1/facts", fact_body(MAX_JSON_DEPTH), "application/json", **world.app.headers
        ),
    )
    assert response.status_code == 201, response.json()
    fact = api.get(f"/v1/facts/{response.json()['fact']['id']}", **world.app.headers)
    assert fact.json()["content"] == json.loads(fact_body(MAX_JSON_DEPTH))["content"]
