"""Serializer fields shared by the apps' APIs."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from rest_framework import serializers

from api.cursors import cursor_decode


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


class CursorField(serializers.CharField):
    """A page cursor (api/cursors.py) as a query parameter: the `(created_at, id)` it holds,
    or a validation error for anything the API did not hand out."""

    default_error_messages = {"invalid": "Not a cursor this API returned."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 200)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> tuple[datetime, uuid.UUID]:
        text = super().to_internal_value(data)
        try:
            return cursor_decode(text)
        except ValueError:
            self.fail("invalid")


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if isinstance(data, dict):
            unknown = {k: ["Unknown field."] for k in sorted(set(data) - set(self.fields))}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class _NoCoercion:
    """A text field that refuses numbers and booleans instead of turning 7 into "7"."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")  # type: ignore[attr-defined]  # a mixin of a DRF field
        return super().to_internal_value(data)


class TextField(_NoCoercion, serializers.CharField):
    """Text kept as sent: ids are opaque, so " p-1" is not "p-1" (and a length limit counts
    what is stored, not what is left after stripping)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


class PatternField(_NoCoercion, serializers.RegexField):
    pass
