"""Serializer fields shared by the apps' APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class UUIDField(serializers.UUIDField):
    """A UUID given as a JSON string, as the schema says. DRF's own also takes a JSON number
    (`UUID(int=...)`), so `false` became the nil UUID (found by the CI fuzzer)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


# For JSON bodies only: a query parameter is always a string and keeps DRF's own fields.
class IntegerField(serializers.IntegerField):
    """A JSON integer (10, or 10.0, which JSON Schema counts as one): DRF's own also takes
    "10" and true."""

    def to_internal_value(self, data: Any) -> Any:
        integral = isinstance(data, int) or (isinstance(data, float) and data.is_integer())
        if isinstance(data, bool) or not integral:
            self.fail("invalid")
        return super().to_internal_value(data)


class FloatField(serializers.FloatField):
    """A JSON number: DRF's own also takes "0.5" and true."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    """A JSON boolean: DRF's own also takes "yes", "1" and 0."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data
