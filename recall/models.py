"""Conversations and their messages, indexed for recall by keyword and by meaning.

A conversation is named by its **thread id**: the app-opaque string a run carries as
`thread_id`, unique per tenant (`Conversation.thread_id`). The API's `conversation_id` is that
string; the UUID primary key is internal (messages reference it, so a long thread id is not
repeated on every message row). The recall guard's `conversationId` is the thread id too, so a
run's `thread_ids` open exactly its own conversation.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Case, Q, Value, When
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from embeddings.providers import DIMENSIONS
from kindmem.models import Agent, Project, Tenant, User
from kindmem.tenant_keys import TenantForeignKey, TenantOwned
from recall.querysets import ConversationQuerySet, MessageQuerySet
from retrieval.fulltext import TEXT_CONFIG


class Conversation(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="conversations")
    thread_id = models.CharField(
        max_length=200, help_text="The conversation's id: the runs' thread_id (app-opaque)."
    )
    agent = TenantForeignKey(Agent, on_delete=models.PROTECT, related_name="conversations")
    project = TenantForeignKey(
        Project, on_delete=models.PROTECT, null=True, blank=True, related_name="conversations"
    )
    participant_id = models.CharField(max_length=200, null=True, blank=True)
    user = models.ForeignKey(
        User, on_delete=models.PROTECT, null=True, blank=True, related_name="conversations"
    )
    # Where the conversation sits for grouping by customer, e.g. ["acme", "emea"]; recall's
    # `segments_prefix` matches conversations whose path starts with the given one.
    segments = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # The highest sequence written; the append service bumps it under the row lock, which is
    # what keeps sequences gap-free under concurrent appends.
    last_sequence = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "thread_id"], name="conversation_per_thread"),
        ]
        indexes = [
            # erasure and access requests find a person's conversations; recall by participant
            models.Index(fields=["tenant", "participant_id"], name="conversation_by_participant"),
            models.Index(fields=["tenant", "agent", "project"], name="conversation_by_agent"),
        ]

    def __str__(self) -> str:
        return f"conversation {self.thread_id}"


class Role(models.TextChoices):
    USER = "user", "user"
    AGENT = "agent", "agent"
    TOOL = "tool", "tool (stored, never indexed or recalled)"


RECALLABLE_ROLES = (Role.USER, Role.AGENT)


class Message(TenantOwned):
    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation = TenantForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    sequence = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField()
    # What the writer keeps with the message and gets back as it gave it, never indexed: an
    # agent framework's own record of the turn (an OpenAI Agents SDK item, with its ids and
    # parts), so a session read back is the one written, while recall searches `text`.
    data = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Keyword index: NULL for tool messages, so they never match a full-text query.
    search = models.GeneratedField(
        expression=Case(
            When(role=Role.TOOL, then=Value(None)),
            default=SearchVector("text", config=TEXT_CONFIG),
            output_field=SearchVectorField(),
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Semantic index: tool messages are never embedded (NULL is not in the HNSW index).
    embedding = VectorField(dimensions=DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "conversation", "sequence"],
                name="message_sequence_per_conversation",
            ),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="message_role_valid"),
            models.CheckConstraint(
                condition=~Q(role=Role.TOOL) | Q(embedding__isnull=True),
                name="tool_message_never_embedded",
            ),
        ]
        indexes = [
            # recall `keyword` (and hybrid's keyword leg): search @@ an OR of the query's words
            GinIndex(fields=["search"], name="message_search_gin"),
            # recall `semantic`: ORDER BY embedding <=> query (cosine), iterative scan
            HnswIndex(
                name="message_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            # recall `list`: a tenant's newest messages first
            models.Index(fields=["tenant", "-created_at", "-id"], name="message_newest"),
            # the embed_messages task finds what is still pending
            models.Index(
                fields=["tenant"],
                condition=Q(embedding__isnull=True) & ~Q(role=Role.TOOL),
                name="message_pending_embedding",
            ),
        ]

    def __str__(self) -> str:
        return f"message {self.conversation_id}#{self.sequence}"


def message_ref(thread_id: str, sequence: int) -> str:
    """How the audit stream names a message: the API's own ids, `<conversation id>#<seq>`."""
    return f"{thread_id}#{sequence}"
