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
