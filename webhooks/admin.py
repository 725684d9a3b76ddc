"""Webhook endpoints in the console: the tenant's endpoints, each one's page with its latest
attempts (when, what the receiver answered, how long it took); registering one goes through
the API's service (`endpoint_register`), which shows the signing secret once."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest, HttpResponse

from api.errors import KindmemError
from console.tenant_wall import TenantScopedAdmin
from webhooks import services
from webhooks.models import DeliveryAttempt, Endpoint, EventKind

# the attempts an endpoint's page lists, newest first
ATTEMPTS_SHOWN = 100


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=EventKind.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = Endpoint
        fields = ["tenant", "url", "events", "include_content", "enabled", "description"]

    def clean_url(self) -> str:
        url = str(self.cleaned_data["url"])
        try:
            services.url_check(url)
        except KindmemError as exc:  # a loopback or private address: a form error
            raise forms.ValidationError(exc.message) from exc
        return url


@admin.register(Endpoint)
class EndpointAdmin(TenantScopedAdmin):
    form = EndpointForm
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ["url", "event_kinds", "enabled", "include_content", "created_at"]
    list_filter = ["enabled", "include_content"]
    ordering = ["-created_at"]
    change_form_template = "admin/webhooks/endpoint/change_form.html"

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).filter(deleted_at__isnull=True)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # an endpoint's URL and events are what it was registered with (a new one otherwise)
        if obj is None:
            return []
        return ["tenant", "url", "events", "include_content", "description"]

    @admin.display(description="events")
    def event_kinds(self, endpoint: Endpoint) -> str:
        return ", ".join(endpoint.events)

    def save_model(self, request: HttpRequest, obj: Endpoint, form: Any, change: bool) -> None:
        if change:
            Endpoint.objects.filter(pk=obj.pk).update(enabled=obj.enabled)
            return
        made = services.endpoint_register(
            tenant_id=obj.tenant_id,
            url=obj.url,
            events=form.cleaned_data["events"],
            include_content=obj.include_content,
            enabled=obj.enabled,
            description=obj.description,
            created_by=f"staff:{request.user.pk}",
        )
        obj.pk, obj.secret, obj.created_at = made.pk, made.secret, made.created_at
        messages.warning(
            request, f"The signing secret, shown this once: {made.secret}", fail_silently=True
        )

    def delete_model(self, request: HttpRequest, obj: Endpoint) -> None:
        services.endpoint_delete(tenant_id=obj.tenant_id, endpoint_id=obj.pk)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        endpoint = self.get_object(request, object_id)  # another tenant's: a 404
        attempts = (
            DeliveryAttempt.objects.filter(
                tenant_id=endpoint.tenant_id, delivery__endpoint_id=endpoint.pk
            )
            .select_related("delivery__event")
            .order_by("-started_at", "-pk")[:ATTEMPTS_SHOWN]
        )
        context = {**(extra_context or {}), "attempts": attempts}
        return super().change_view(request, object_id, form_url, context)
