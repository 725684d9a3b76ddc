"""The API renders JSON with orjson (api/renderers.py), writing what DRF's JSONRenderer
wrote: clients parse the same values."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pytest
from rest_framework.renderers import JSONRenderer
from rest_framework.settings import api_settings

from api.renderers import ApiJSONRenderer

BODY = {
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "at": dt.datetime(2026, 12, 1, 21, 8, 36, 123456, tzinfo=dt.UTC),
    "local": dt.datetime(2026, 12, 1, 22, 8, 36, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    "day": dt.date(2026, 12, 1),
    "time": dt.time(7, 30, 0, 250000),
    "amount": Decimal("12.50"),
    "text": "Zoë prefers crème brûlée — 日本語",
    "scores": [0.1, 1e-05, 3.0, -2.5],
    "counts": {1: "one", 2: "two"},
    "flags": [True, False, None],
    "nested": {"a": [{"b": [1, 2, {"c": "d"}]}]},
}


def test_the_api_renders_with_the_orjson_renderer() -> None:
    # given / when: the renderer every API view uses
    [renderer] = api_settings.DEFAULT_RENDERER_CLASSES

    # then: kindmem's
    assert renderer is ApiJSONRenderer


def test_it_writes_what_drfs_renderer_wrote() -> None:
    # when: one body rendered by both
    fast = ApiJSONRenderer().render(BODY)
    drf = JSONRenderer().render(BODY)

    # then: the same JSON values (a UTC datetime with `Z`, a Decimal as a string, int keys as
    # strings), compact UTF-8 as DRF's: non-ASCII text is not escaped
    assert json.loads(fast) == json.loads(drf)
    assert json.loads(fast)["at"] == "2026-12-01T21:08:36.123456Z"
    assert "Zoë".encode() in fast
    assert b", " not in fast
    assert b": " not in fast


def test_content_nested_deeper_than_orjson_goes_still_renders() -> None:
    # given: a fact's content may be nested as deep as the parser accepts (more than orjson's
    # 254 levels)
    deep: object = "bottom"
    for _ in range(400):
        deep = [deep]

    # when: rendered
    rendered = ApiJSONRenderer().render({"content": deep})

    # then: the same JSON as DRF's renderer writes, not an error
    assert json.loads(rendered) == {"content": deep}


def test_what_neither_knows_is_refused_as_before() -> None:
    # given: a value no JSON encoder knows
    class Opaque:
        pass

    # when / then: an error (a 500 and its log), never a silent null
    with pytest.raises(TypeError):
        ApiJSONRenderer().render({"x": Opaque()})
