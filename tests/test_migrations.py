"""The models and the migrations agree: a model change (a field, an index, a validator that
moved module) without its migration fails here, not on an operator's `migrate`."""

from __future__ import annotations

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_every_model_change_has_its_migration() -> None:
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
