"""`Link`: an attributed link from one fact to another."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from facts.models.fact import Fact
from kindmem.models import Tenant
from kindmem.tenant_keys import TenantForeignKey, TenantOwned


class Link(TenantOwned):
    """An attributed link from one fact to another (the 003 seed's IEdge)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = TenantForeignKey(Fact, on_delete=models.CASCADE, related_name="links_out")
    target = TenantForeignKey(Fact, on_delete=models.CASCADE, related_name="links_in")
    type = models.CharField(max_length=100)
    confidence = models.FloatField(null=True, blank=True)
    provenance = models.JSONField(null=True, blank=True)
    valid_at = models.DateTimeField(null=True, blank=True)
    invalid_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "source", "target", "type"], name="link_once_per_type"
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=0.0, confidence__lte=1.0),
                name="link_confidence_0_to_1",
            ),
            models.CheckConstraint(condition=~Q(type=""), name="link_type_not_empty"),
        ]
        indexes = [
            # traversal: outbound and inbound edges of a fact
            models.Index(fields=["tenant", "source"], name="link_out"),
            models.Index(fields=["tenant", "target"], name="link_in"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.type}-> {self.target_id}"
