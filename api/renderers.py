"""The API's JSON renderer: drf-orjson-renderer's (orjson, ~10-20x DRF's json.dumps on a
search's response: bench/render_json.py), writing what DRF's JSONRenderer would write."""

from __future__ import annotations

from typing import Any

import orjson
from drf_orjson_renderer.renderers import ORJSONRenderer
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_drf = JSONEncoder()


class ApiJSONRenderer(ORJSONRenderer):
    """orjson, with DRF's encoding wherever orjson's own would differ: a datetime, date or time
    as DRF writes it (`Z` for UTC), and anything orjson does not know by DRF's encoder (which
    refuses what it does not know). A body orjson will not write (a dict key that is
    not a string: orjson's option for them costs every render; nested deeper than its 254
    levels, as a fact's content may be) is rendered by DRF's own renderer instead."""

    options = orjson.OPT_PASSTHROUGH_DATETIME

    @staticmethod
    def default(obj: Any) -> Any:
        return _drf.default(obj)

    def render(
        self, data: Any, media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        try:
            return super().render(data, media_type, renderer_context)
        except orjson.JSONEncodeError:
            return JSONRenderer().render(data, media_type, renderer_context)
