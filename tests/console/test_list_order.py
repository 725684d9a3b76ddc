"""Every list the console pages through is in a set order: a list without one may show a row on
two pages and another on none (Django's UnorderedObjectListWarning). The lists are each
ModelAdmin's page and the autocomplete answers it gives other pages' relation fields."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.core.paginator import UnorderedObjectListWarning
from django.test import Client
from django.urls import reverse

from tests.console.conftest import populate

pytestmark = pytest.mark.django_db


def list_urls() -> Iterator[str]:
    """Each registered model's list, and the autocomplete of each of its relation fields (the
    related model's rows, paged by the related model's admin)."""
    for model in admin.site._registry:
        opts = model._meta
        yield reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for field in opts.get_fields():
            if field.is_relation and field.concrete:
                query = {
                    "app_label": opts.app_label,
                    "model_name": opts.model_name,
                    "field_name": field.name,
                    "term": "",
                }
                yield f"{reverse('admin:autocomplete')}?{urlencode(query)}"


@pytest.mark.parametrize("role", ["superuser", "officer", "reviewer"])
def test_no_console_list_pages_through_rows_in_no_set_order(api, world, role):
    # given a tenant with rows in every model, and its staff in one of the roles
    populated = populate(api, world, "zqorder")
    client = Client()
    client.force_login(populated.staff.by_role(role))
    opened = 0
    # when every list and autocomplete is opened, a list paged in no set order an error
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnorderedObjectListWarning)
        for url in list_urls():
            # (the page raises it: the test client re-raises it here, naming the model)
            opened += client.get(url).status_code == 200
    # then every one of them opened in its order (and the walk read lists, not refusals)
    assert opened >= 10
