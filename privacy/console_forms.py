"""The console's start forms: an erasure (with its preview's confirmation), the lookup of an
erased id, a subject access request (privacy/admin.py and privacy/erasure_pages.py show them)."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.http import HttpRequest

from console.tenant_wall import confine_tenant_field
from kindmem.models import SubjectKind, Tenant
from privacy.serializers import PERSON_KINDS


def prefilled(request: HttpRequest, *names: str) -> dict[str, str]:
    """A start form's person, filled in from the link that led to it (a person's page)."""
    return {name: request.GET[name][:200] for name in names if name in request.GET}


class TenantStartForm(forms.Form):
    """A start form's tenant: one of the officer's tenants (their own, preselected and hidden;
    any for platform staff), so another tenant's id is a form error, not a refused write."""

    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"))

    def __init__(self, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        confine_tenant_field(request, cast(forms.ModelChoiceField, self.fields["tenant"]))


class ErasureStartForm(TenantStartForm):
    target_kind = forms.ChoiceField(
        choices=SubjectKind.choices,
        label="Erase a",
        help_text=(
            "A participant is an app's end user (the id the app gives them); a user is a Kindgi "
            "account (its UUID); a conversation is one thread; an external id names someone "
            "in facts' subjects."
        ),
    )
    target_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Exactly as kindmem stores it. The next page shows what it matches.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Kept in the receipt: how the request reached you (it names no one).",
    )


class ErasureConfirmForm(forms.Form):
    """The preview page's one question, asked only when nothing matches the id."""

    nothing_matches_confirmed = forms.BooleanField(
        required=False,
        label="Nothing matches this id: erase it anyway (the receipt will show nothing erased)",
    )


class ErasureLookupForm(TenantStartForm):
    target_kind = forms.ChoiceField(choices=SubjectKind.choices, label="Kind")
    target_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Checked against the erasures' target references; it is not stored.",
    )


class AccessRequestStartForm(TenantStartForm):
    subject_kind = forms.ChoiceField(
        choices=[(k.value, k.label) for k in PERSON_KINDS],
        label="Export everything about a",
        help_text=(
            "A participant is an app's end user (the id the app gives them); a user is a Kindgi "
            "account (its UUID); an external id names someone in facts' subjects."
        ),
    )
    subject_id = forms.CharField(
        max_length=200,
        label="Id",
        help_text="Exactly as kindmem stores it. A worker builds the export (JSON and a zip).",
    )
