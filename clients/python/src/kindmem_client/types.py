"""The API's shapes, as typed dicts: generated from kindmem's OpenAPI schema by
`clients/python/scripts/generate_types.py`; do not edit by hand."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AccessRequest",
    "AccessRequestCreateInput",
    "ActionEnum",
    "Append",
    "AppendInput",
    "AppendedMessage",
    "Approval",
    "ApprovalList",
    "ApproveInput",
    "Attribution",
    "AuditEvent",
    "AuditEventOutputOutcomeEnum",
    "AuditPage",
    "AuditScope",
    "AuditTarget",
    "Capabilities",
    "ChangeEnum",
    "CrossEncoderCapability",
    "DecisionInput",
    "DownloadLinks",
    "EmbedderCapability",
    "ErasedBefore",
    "Erasure",
    "ErasurePreview",
    "ErasurePreviewInput",
    "Error",
    "EventsEnum",
    "Extract",
    "ExtractOutputOutcomeEnum",
    "ExtractionCapability",
    "ExtractionDecision",
    "ExtractionDecisionOutputOutcomeEnum",
    "ExtractionJob",
    "ExtractionJobStatusEnum",
    "ExtractionState",
    "Fact",
    "FactCreateInput",
    "FactImport",
    "FactList",
    "FactSearch",
    "FactSearchInput",
    "FactSearchInputModeEnum",
    "FactSupersedeInput",
    "FactVerifyInput",
    "FactWrite",
    "FactWriteOutputOutcomeEnum",
    "FileImported",
    "FileImportedOutputOutcomeEnum",
    "Finding",
    "HeldItem",
    "KindE16Enum",
    "Link",
    "LinkChange",
    "LinkCreate",
    "LinkCreateInput",
    "LinkImported",
    "LinkImportedOutputOutcomeEnum",
    "LinkTraversal",
    "LogAppendInput",
    "LogAppendInputKindEnum",
    "LogEntry",
    "LogPage",
    "LogVerify",
    "Message",
    "MessageDelete",
    "MessageInput",
    "MessageList",
    "MessagesClear",
    "Neighbour",
    "PatchedLinkUpdateInput",
    "PhaseEnum",
    "Reached",
    "Readers",
    "ReadersInput",
    "ReasonEnum",
    "ReasonsEnum",
    "Recall",
    "RecallHit",
    "RecallInput",
    "RecallInputModeEnum",
    "RecalledMessage",
    "Remember",
    "RememberInput",
    "RememberOutputOutcomeEnum",
    "RerankerEnum",
    "Retention",
    "RetentionInput",
    "RetrievalCapability",
    "Review",
    "ReviewEnum",
    "ReviewReasons",
    "RevisionList",
    "RoleEnum",
    "RolesEnum",
    "Run",
    "RunMint",
    "RunMintInput",
    "Scope",
    "ScopeInput",
    "SearchHit",
    "SearchScopeInput",
    "SelectionInput",
    "Stale",
    "StatusDe8Enum",
    "StatusEnum",
    "Subject",
    "SubjectInput",
    "SubjectKindEnum",
    "TargetKindEnum",
    "TrustEnum",
    "WebhookEndpoint",
    "WebhookEndpointCreateInput",
    "WebhookEndpointCreated",
    "WebhookEndpointList",
    "WhoAmI",
]


class AccessRequest(TypedDict):
    id: str
    status: str
    subject_kind: str
    subject_id: str
    requested_by: str
    created_at: str
    finished_at: str | None
    download: DownloadLinks | None


class AccessRequestCreateInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    subject_kind: SubjectKindEnum
    subject_id: str


ActionEnum = Literal["add", "update"]


class Append(TypedDict):
    conversation_id: str
    messages: list[AppendedMessage]


class AppendInput(TypedDict):
    """One message (`role`, `text`) or a batch (`messages`); creation fields for an app."""

    role: NotRequired[RoleEnum]
    text: NotRequired[str]
    messages: NotRequired[list[MessageInput]]
    agent_id: NotRequired[str]
    project_id: NotRequired[str]
    participant_id: NotRequired[str]
    user_id: NotRequired[str]
    segments: NotRequired[list[str]]


class AppendedMessage(TypedDict):
    sequence: int
    role: str
    created_at: str
    embedded: bool


class Approval(TypedDict):
    """Needs `revision__fact` selected and `revision__subjects` prefetched; `stale` is read
    from the approval's `staleness` where the view set it (a page of the queue)."""

    id: str
    status: StatusEnum
    reasons: list[str]
    findings: list[Finding]
    agent_id: str
    agent_version: str
    project_id: str | None
    run_id: str | None
    created_at: str
    decided_at: str | None
    decided_by: str
    note: str
    fact: Fact
    verified_revision_id: str | None
    base_version: int | None
    stale: Stale | None


class ApprovalList(TypedDict):
    approvals: list[Approval]
    next_cursor: str | None


class ApproveInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    note: NotRequired[str]
    verify: NotRequired[bool]


class Attribution(TypedDict):
    kind: str
    id: str
    agent_version: str | None


class AuditEvent(TypedDict):
    seq: int
    timestamp: NotRequired[str]
    phase: PhaseEnum
    outcome: AuditEventOutputOutcomeEnum
    error_code: NotRequired[str]
    error: NotRequired[str]
    kind: str
    endpoint: str
    principal: str
    principal_kind: str
    run_id: NotRequired[str | None]
    agent_id: NotRequired[str]
    object_ids: NotRequired[list[str]]
    subjects: NotRequired[list[str]]
    project_id: NotRequired[str | None]
    query_snapshot: NotRequired[Any]
    targets: list[AuditTarget]


AuditEventOutputOutcomeEnum = Literal["success", "failure"]


class AuditPage(TypedDict):
    events: list[AuditEvent]
    next_since_seq: int


class AuditScope(TypedDict):
    """A fact's scope, naming only the containers set."""

    org_id: NotRequired[str]
    project_id: NotRequired[str]
    user_id: NotRequired[str]
    participant_id: NotRequired[str]
    thread_id: NotRequired[str]
    session_id: NotRequired[str]


class AuditTarget(TypedDict):
    type: str | None
    scope: AuditScope


class Capabilities(TypedDict):
    kind: str
    supports_semantic_recall: bool
    supports_temporal_query: bool
    supports_link_traversal: bool
    facts: RetrievalCapability
    recall: RetrievalCapability
    rerankers: list[str]
    default_rerankers: list[str]
    arms: list[str]
    cross_encoder: CrossEncoderCapability
    relevance_floors: dict[str, float]
    embedder: EmbedderCapability
    extraction: ExtractionCapability
    merge_patch: bool
    import_files: bool
    operations: dict[str, bool]


ChangeEnum = Literal["changed", "deleted", "erased"]


class CrossEncoderCapability(TypedDict):
    configured: bool
    model: str | None
    candidates: int
    budget_ms: int


class DecisionInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    note: NotRequired[str]


class DownloadLinks(TypedDict):
    json: str
    zip: str
    expires_in_seconds: int


class EmbedderCapability(TypedDict):
    available: bool
    provider: str
    model: str | None
    dimensions: int | None
    runtime: str | None
    error: str | None


class ErasedBefore(TypedDict):
    id: str
    finished_at: str | None


class Erasure(TypedDict):
    id: str
    status: str
    target_kind: str
    target_id: str
    reason: str
    requested_by: str
    target_reference: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    progress: dict[str, int]
    receipt: Any


class ErasurePreview(TypedDict):
    dry_run: NotRequired[bool]
    target_kind: str
    target_id: str
    nothing_matches: bool
    counts: dict[str, int]
    total: int
    held: list[HeldItem]
    held_count: int
    unfinished_erasure_id: NotRequired[str | None]
    erased_before: list[ErasedBefore]


class ErasurePreviewInput(TypedDict):
    """A dry run takes the same body; its reason may be left out."""

    target_kind: TargetKindEnum
    target_id: str
    reason: NotRequired[str]


class Error(TypedDict):
    code: str
    message: str
    details: Any


EventsEnum = Literal[
    "approval.pending",
    "approval.decided",
    "erasure.completed",
    "access_export.ready",
    "extraction.applied",
    "fact.changed",
]


class Extract(TypedDict):
    outcome: ExtractOutputOutcomeEnum
    conversation_id: str
    extracted_through: int
    last_sequence: int
    job: ExtractionJob | None


ExtractOutputOutcomeEnum = Literal["queued", "already-queued", "up-to-date"]


class ExtractionCapability(TypedDict):
    available: bool
    model: str | None
    error: str | None


class ExtractionDecision(TypedDict):
    index: int
    action: ActionEnum
    type: str
    text: str | None
    cited: list[int]
    outcome: ExtractionDecisionOutputOutcomeEnum
    fact_id: str
    revision_id: str
    approval_id: str | None
    reasons: list[ReasonsEnum]


ExtractionDecisionOutputOutcomeEnum = Literal["created", "proposed", "unchanged"]


class ExtractionJob(TypedDict):
    id: str
    status: ExtractionJobStatusEnum
    first_sequence: int
    last_sequence: int
    model: str
    prompt_version: str
    tokens_in: int
    tokens_out: int
    error_code: str
    error: str
    decisions: list[ExtractionDecision]
    created_at: str
    started_at: str | None
    finished_at: str | None


ExtractionJobStatusEnum = Literal["queued", "running", "applied", "refused", "failed"]


class ExtractionState(TypedDict):
    conversation_id: str
    extracted_through: int
    last_sequence: int
    jobs: list[ExtractionJob]


class Fact(TypedDict):
    """A revision in the seed's Fact shape (snake_case): `id` is the fact, `revision_id` this
    revision. Needs `fact` selected and `subjects` prefetched (no query per row)."""

    id: str
    revision_id: str
    type: str
    scope: Scope
    key: str | None
    tags: list[str]
    version: int
    content: Any
    content_hash: str
    created_at: str
    updated_at: str
    trust: TrustEnum
    verified_by: str | None
    verified_at: str | None
    attributed_to: Attribution
    generated_by: dict[str, Any] | None
    subjects: list[Subject]
    valid_from: str | None
    valid_until: str | None
    observed_at: str | None
    invalidated_at: str | None
    invalidated_by: str | None
    invalidation_reason: str | None
    review: ReviewEnum | None
    retention: Retention
    expires_at: str | None
    source: Any
    caused_by_log_id: list[str]
    supersedes: str | None
    embedding_state: str


class FactCreateInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    content: Any
    subjects: NotRequired[list[SubjectInput]]
    valid_from: NotRequired[str | None]
    valid_until: NotRequired[str | None]
    observed_at: NotRequired[str | None]
    retention: NotRequired[RetentionInput]
    source: NotRequired[Any]
    caused_by_log_id: NotRequired[list[str]]
    type: str
    scope: NotRequired[ScopeInput]
    key: NotRequired[str | None]
    tags: NotRequired[list[str]]


class FactImport(TypedDict):
    files: list[FileImported]
    links: list[LinkImported]


class FactList(TypedDict):
    facts: list[Fact]
    next_cursor: str | None


class FactSearch(TypedDict):
    hits: list[SearchHit]
    reranker: NotRequired[RerankerEnum]


class FactSearchInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    mode: NotRequired[FactSearchInputModeEnum]
    query: str
    type: NotRequired[str]
    scope: NotRequired[SearchScopeInput]
    tags: NotRequired[list[str]]
    valid_at: NotRequired[str]
    top_k: NotRequired[int]
    readers: NotRequired[ReadersInput]
    abstain: NotRequired[bool]
    min_relevance: NotRequired[float]


FactSearchInputModeEnum = Literal["keyword", "semantic", "hybrid"]


class FactSupersedeInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    content: Any
    subjects: NotRequired[list[SubjectInput]]
    valid_from: NotRequired[str | None]
    valid_until: NotRequired[str | None]
    observed_at: NotRequired[str | None]
    retention: NotRequired[RetentionInput]
    source: NotRequired[Any]
    caused_by_log_id: NotRequired[list[str]]
    expected_version: NotRequired[int]


class FactVerifyInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    expected_version: NotRequired[int]


class FactWrite(TypedDict):
    outcome: FactWriteOutputOutcomeEnum
    status: StatusDe8Enum
    fact: Fact
    approval_id: str | None
    review: ReviewReasons | None


FactWriteOutputOutcomeEnum = Literal["created", "superseded", "verified", "unchanged", "deleted"]


class FileImported(TypedDict):
    file: str
    id: str
    outcome: FileImportedOutputOutcomeEnum
    fact_id: str
    revision_id: str
    approval_id: str | None
    review: ReviewReasons | None


FileImportedOutputOutcomeEnum = Literal["created", "unchanged", "superseded"]


class Finding(TypedDict):
    reason: str
    rule: str
    start: int
    end: int
    match: str


class HeldItem(TypedDict):
    kind: str
    id: str
    fact_id: str
    version: int
    hold: str


KindE16Enum = Literal["participant", "user", "external"]


class Link(TypedDict):
    id: str
    source: str
    target: str
    type: str
    confidence: float | None
    provenance: Any
    valid_at: str | None
    invalid_at: str | None
    created_by: str
    created_at: str


class LinkChange(TypedDict):
    link: Link


class LinkCreate(TypedDict):
    created: bool
    link: Link


class LinkCreateInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    target: str
    type: str
    confidence: NotRequired[float | None]
    provenance: NotRequired[Any]
    valid_at: NotRequired[str | None]
    invalid_at: NotRequired[str | None]


class LinkImported(TypedDict):
    file: str
    type: str
    target: str
    outcome: LinkImportedOutputOutcomeEnum
    reason: ReasonEnum | None
    link_id: str | None
    source_fact_id: str | None
    target_fact_id: str | None


LinkImportedOutputOutcomeEnum = Literal["created", "unchanged", "dropped"]


class LinkTraversal(TypedDict):
    reached: list[Reached]


class LogAppendInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    kind: LogAppendInputKindEnum
    payload: Any
    caused_by_log_id: NotRequired[str | None]


LogAppendInputKindEnum = Literal[
    "turn", "tool-call", "tool-result", "memory-read", "memory-write", "decision", "error", "note"
]


class LogEntry(TypedDict):
    id: str
    run_id: str
    sequence: int
    kind: str
    payload: Any
    content_hash: str
    payload_salt: str | None
    prev_hash: str
    entry_hash: str
    hash_version: int
    payload_erased_at: str | None
    caused_by_log_id: str | None
    created_at: str


class LogPage(TypedDict):
    entries: list[LogEntry]
    next_after_sequence: int | None


class LogVerify(TypedDict):
    ok: bool
    length: int
    head: str
    first_bad_sequence: int | None
    reason: str | None
    unverifiable_sequences: list[int]


class Message(TypedDict):
    sequence: int
    role: str
    text: str
    data: Any
    created_at: str


class MessageDelete(TypedDict):
    conversation_id: str
    message: Message


class MessageInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    role: RoleEnum
    text: str
    data: NotRequired[Any]


class MessageList(TypedDict):
    conversation_id: str
    messages: list[Message]
    next_before_sequence: int | None


class MessagesClear(TypedDict):
    conversation_id: str
    deleted: int


class Neighbour(TypedDict):
    role: str
    text: str


class PatchedLinkUpdateInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    confidence: NotRequired[float | None]
    provenance: NotRequired[Any]
    valid_at: NotRequired[str | None]
    invalid_at: NotRequired[str | None]


PhaseEnum = Literal["read", "write", "delete", "retrieve"]


class Reached(TypedDict):
    hops: int
    link: Link
    fact: Fact


class Readers(TypedDict):
    all: bool
    project_ids: list[str]
    org_ids: list[str]
    user_ids: list[str]
    participant_ids: list[str]
    thread_ids: list[str]
    on_behalf_of_project_ids: list[str]


class ReadersInput(TypedDict):
    """Readers a read is narrowed to (the seed's `MemoryReaders`, as `GET /v1/me` names them):
    a row is returned only if these readers may read it *and* the credential's may
    (`kindmem.guards`). Nothing here widens a credential: an id it does not read, or `all`,
    narrows nothing further. `{}` reads tenant-wide facts only (the seed's absent readers)."""

    all: NotRequired[bool]
    project_ids: NotRequired[list[str]]
    org_ids: NotRequired[list[str]]
    user_ids: NotRequired[list[str]]
    participant_ids: NotRequired[list[str]]
    thread_ids: NotRequired[list[str]]
    on_behalf_of_project_ids: NotRequired[list[str]]


ReasonEnum = Literal["target-not-imported", "waits-for-review", "not-readable"]


ReasonsEnum = Literal[
    "wide-scope",
    "instruction-like",
    "hidden-characters",
    "verified-slot",
    "asserted-overwrite",
    "contradiction",
    "extracted",
]


class Recall(TypedDict):
    hits: list[RecallHit]
    reranker: NotRequired[RerankerEnum]


class RecallHit(TypedDict):
    message: RecalledMessage
    score: float | None
    ranks: dict[str, int]


class RecallInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    selections: list[SelectionInput]
    mode: RecallInputModeEnum
    roles: NotRequired[list[RolesEnum]]
    query: NotRequired[str]
    top_k: NotRequired[int]
    readers: NotRequired[ReadersInput]
    abstain: NotRequired[bool]
    min_relevance: NotRequired[float]


RecallInputModeEnum = Literal["list", "keyword", "semantic", "hybrid"]


class RecalledMessage(TypedDict):
    conversation_id: str
    sequence: int
    role: str
    text: str
    created_at: str
    agent_id: str
    project_id: str | None
    participant_id: str | None
    user_id: str | None
    before: Neighbour | None
    after: Neighbour | None


class Remember(TypedDict):
    """The seed's RememberFactResult, snake_case."""

    outcome: RememberOutputOutcomeEnum
    status: StatusDe8Enum
    fact: Fact
    approval_id: str | None
    review: Review | None


class RememberInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    type: str
    text: str
    key: NotRequired[str | None]
    valid_until: NotRequired[str | None]
    step_id: NotRequired[str | None]
    tool_call_id: str


RememberOutputOutcomeEnum = Literal["created", "superseded", "replayed", "unchanged"]


RerankerEnum = Literal["applied", "skipped"]


class Retention(TypedDict):
    keep_days: int | None
    keep_until: str | None
    legal_hold: bool


class RetentionInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    keep_days: NotRequired[int | None]
    keep_until: NotRequired[str | None]
    legal_hold: NotRequired[bool | None]


class RetrievalCapability(TypedDict):
    modes: list[str]
    unavailable_modes: dict[str, str]


class Review(TypedDict):
    reasons: list[ReasonsEnum]


ReviewEnum = Literal["pending", "approved"]


class ReviewReasons(TypedDict):
    reasons: list[ReasonsEnum]


class RevisionList(TypedDict):
    revisions: list[Fact]


RoleEnum = Literal["user", "agent", "tool"]


RolesEnum = Literal["user", "agent"]


class Run(TypedDict):
    id: str
    agent_id: str
    agent_version: str
    project_id: str
    participant_id: str | None
    user_id: str | None
    thread_id: str | None
    session_id: str | None
    created_at: str
    expires_at: str


class RunMint(TypedDict):
    run: Run
    token: str


class RunMintInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    agent_id: str
    project_id: str
    participant_id: NotRequired[str | None]
    user_id: NotRequired[str | None]
    thread_id: NotRequired[str | None]
    session_id: NotRequired[str | None]


class Scope(TypedDict):
    org_id: NotRequired[str]
    project_id: NotRequired[str]
    user_id: NotRequired[str]
    participant_id: NotRequired[str]
    thread_id: NotRequired[str]
    session_id: NotRequired[str]


class ScopeInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    org_id: NotRequired[str | None]
    project_id: NotRequired[str | None]
    user_id: NotRequired[str | None]
    participant_id: NotRequired[str | None]
    thread_id: NotRequired[str | None]
    session_id: NotRequired[str | None]


class SearchHit(TypedDict):
    fact: Fact
    score: float
    ranks: dict[str, int]


class SearchScopeInput(TypedDict):
    """Narrowing within what the guard lets through: every given key must match exactly."""

    org_id: NotRequired[str]
    project_id: NotRequired[str]
    user_id: NotRequired[str]
    participant_id: NotRequired[str]
    thread_id: NotRequired[str]
    session_id: NotRequired[str]


class SelectionInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    agent_id: str
    conversation_id: NotRequired[str]
    before_sequence: NotRequired[int]
    exclude_conversation_id: NotRequired[str]
    participant_id: NotRequired[str]
    user_id: NotRequired[str]
    project_id: NotRequired[str]
    segments_prefix: NotRequired[list[str]]


class Stale(TypedDict):
    """Why approving is refused now (`stale-approval`): the fact moved on since the memory was
    computed from `base_version`."""

    base_version: int | None
    current_version: int | None
    change: ChangeEnum
    message: str


StatusDe8Enum = Literal["stored", "pending-review"]


StatusEnum = Literal["pending", "approved", "rejected", "verified", "superseded"]


class Subject(TypedDict):
    kind: str
    id: str


class SubjectInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    kind: KindE16Enum
    id: str


SubjectKindEnum = Literal["participant", "user", "external"]


TargetKindEnum = Literal["participant", "user", "external", "conversation"]


TrustEnum = Literal["verified", "asserted", "unverified"]


class WebhookEndpoint(TypedDict):
    id: str
    url: str
    events: list[str]
    include_content: bool
    enabled: bool
    description: str
    created_at: str


class WebhookEndpointCreateInput(TypedDict):
    """Rejects fields it does not declare, naming them: a typo is an error, not a no-op."""

    url: str
    events: list[EventsEnum]
    include_content: NotRequired[bool]
    enabled: NotRequired[bool]
    description: NotRequired[str]


class WebhookEndpointCreated(TypedDict):
    id: str
    url: str
    events: list[str]
    include_content: bool
    enabled: bool
    description: str
    created_at: str
    secret: str


class WebhookEndpointList(TypedDict):
    endpoints: list[WebhookEndpoint]


class WhoAmI(TypedDict):
    kind: str
    tenant_id: str
    principal: str
    run_id: str | None
    readers: Readers
