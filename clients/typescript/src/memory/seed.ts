// The seed's declarations (`@kindgi/memory` 0.1.5, ../shared/seeds/000_8f9869d789b0633a.txt),
// as this package's own types: what `KindmemMemory` implements, for code that has no
// `@kindgi/memory` to import them from. The package's tests hold them to the seed's copy in
// test/fixtures/kindgi/ (a program importing `@kindgi/memory` takes a `KindmemMemory`), so one
// that drifts from the seed is a type error there. Types only, and `LOG_KINDS`: the seed's guards
// are implemented in guards.ts; its fusion is kindmem's own, on the server (`searchHybrid`).

// ============ from @kindgi/types ============
/** A nominal string: structurally a string, statically distinct from other ids. */
export type Brand<T, B extends string> = T & { readonly __brand: B };

export type TenantId = Brand<string, 'TenantId'>;
export type UserId = Brand<string, 'UserId'>;
export type OrgId = Brand<string, 'OrgId'>;
export type ProjectId = Brand<string, 'ProjectId'>;
export type ThreadId = Brand<string, 'ThreadId'>;
export type SessionId = Brand<string, 'SessionId'>;
export type RunId = Brand<string, 'RunId'>;
export type FactId = Brand<string, 'FactId'>;
export type LogEntryId = Brand<string, 'LogEntryId'>;

/** An ISO 8601 timestamp string, UTC. */
export type Timestamp = Brand<string, 'Timestamp'>;

/** Success or failure, told apart by `kind`. */
export type Result<T, E> =
  { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'err'; readonly error: E };

/** One step of an app-defined finer scope below a project (`company=acme`, then `role=cfo`). */
export interface ScopeSegment {
  readonly key: string;
  readonly value: string;
}

// ============ from @kindgi/embedding ============
export type EmbeddingError =
  | NoEmbeddingProviderError
  | UnknownEmbeddingModelError
  | DuplicateEmbeddingProviderError
  | AmbiguousDefaultProviderError;

/** Semantic work was asked for without naming a model, and no provider is registered. */
export interface NoEmbeddingProviderError {
  readonly code: 'no-embedding-provider';
  readonly message: string;
}

/** A model was named that no registered provider embeds with. */
export interface UnknownEmbeddingModelError {
  readonly code: 'unknown-embedding-model';
  readonly message: string;
  readonly model: string;
  readonly known: readonly string[];
}

export interface DuplicateEmbeddingProviderError {
  readonly code: 'duplicate-embedding-provider';
  readonly message: string;
  readonly model: string;
}

/** No model named, and more than one provider registered. */
export interface AmbiguousDefaultProviderError {
  readonly code: 'ambiguous-default-provider';
  readonly message: string;
  readonly known: readonly string[];
}

export interface EmbeddingProvider {
  embed(text: string): Promise<Float32Array>;
  dimensions(): number;
  describe(): { readonly name: string; readonly version: string; readonly model: string };
}

export interface EmbeddingProviderRegistry {
  register(provider: EmbeddingProvider): Result<void, DuplicateEmbeddingProviderError>;
  getByModel(model: string): EmbeddingProvider | undefined;
  list(): readonly EmbeddingProvider[];
  has(model: string): boolean;
  size(): number;
  resolve(
    model?: string,
  ): Result<
    EmbeddingProvider,
    NoEmbeddingProviderError | UnknownEmbeddingModelError | AmbiguousDefaultProviderError
  >;
}

// ============ types.d.ts ============

/** Every memory item is scoped. (The first fields are the diff's context.) */
export interface MemoryScope {
  readonly tenantId: TenantId;
  readonly userId?: UserId;
  readonly orgId?: OrgId;
  readonly projectId?: ProjectId;
  readonly threadId?: ThreadId;
  readonly sessionId?: SessionId;
  /**
   * An app's end user, by the app's own opaque id (as conversations and
   * judgments name them): a fact about or for one person who isn't a
   * Kindgi user. A participant's facts are private to that participant's
   * runs. Needs `projectId`: an app's end users belong to a project.
   */
  readonly participantId?: string;
}
/**
 * Who can see which facts: the containers a reader may read, worked out
 * by the server from the run or the caller (never from a request body),
 * and applied inside every query. A fact is readable when each container
 * its scope names is one the reader has: its project, org, user,
 * participant and thread (a fact naming none of them is tenant-wide, and
 * every reader in the tenant sees it). A missing field grants none.
 */
export interface MemoryReaders {
  /** Every fact in the tenant (a tenant admin). The other fields are then ignored. */
  readonly all?: true;
  /** Projects whose facts it reads. */
  readonly projectIds?: readonly ProjectId[];
  /** Orgs whose org-wide facts (no project) it reads: a run's project's org. */
  readonly orgIds?: readonly OrgId[];
  /** Kindgi users whose personal facts it reads. */
  readonly userIds?: readonly UserId[];
  /** End users (participants) whose facts it reads. */
  readonly participantIds?: readonly string[];
  /** Conversations whose thread facts it reads. */
  readonly threadIds?: readonly ThreadId[];
  /**
   * Projects where it reads every participant's and every thread's facts:
   * an app's own credential, acting for all of its end users.
   */
  readonly onBehalfOfProjectIds?: readonly ProjectId[];
}
/**
 * How far a fact is trusted. `verified`: a person with the right checked
 * it. `asserted`: an app or a person wrote it. `unverified`: an agent
 * remembered it during a conversation.
 */
export type FactTrust = 'verified' | 'asserted' | 'unverified';
/** Whom a fact is about: what access and erasure requests by person find. */
export interface FactSubject {
  readonly kind: 'participant' | 'user' | 'external';
  readonly id: string;
}
/** Who asserted a fact (PROV `wasAttributedTo`), set by the server from the writer. */
export interface FactAttribution {
  readonly kind: 'user' | 'service' | 'agent';
  readonly id: string;
  readonly agentVersion?: string;
}
/** The run step that wrote a fact (PROV `wasGeneratedBy`), for one an agent wrote. */
export interface FactGeneratedBy {
  readonly runId: string;
  readonly stepId?: string;
  readonly toolCallId?: string;
}
/** Why a revision stopped being current. */
export type FactInvalidationReason = 'superseded' | 'deleted' | 'erased' | 'expired';
/**
 * Retention override at the fact level. Tenant policy sets defaults; a
 * fact-level override wins if present. (Its fields are the diff's context.)
 */
export interface Retention {
  readonly keepUntil?: Timestamp;
  readonly keepDays?: number;
  readonly legalHold?: boolean;
}
/** External source of a Kind-B (cached-view) fact. (Written from the package's shape.) */
export interface Source {
  readonly kind: 'http-api' | 'blob' | 'mcp-tool' | 'external-db' | 'user-input';
  readonly uri?: string;
  readonly freshness: SourceFreshness;
  readonly refresh: SourceRefresh;
}
/** (Written from the package's shape.) */
export interface SourceFreshness {
  readonly ttlSeconds?: number;
  readonly lastVerifiedAt?: Timestamp;
  readonly etag?: string;
  readonly sourceVersion?: string;
}
/** (Written from the package's shape.) */
export interface SourceRefresh {
  readonly strategy: 'on-read' | 'background' | 'manual';
  readonly handler?: string;
  readonly priority?: number;
}
/**
 * A typed, versioned record. Two flavors expressible via the same shape:
 * Kind A (no `source` block) and Kind B (a cached view, with one). (The
 * fields between `version` and `supersedes` are the diff's context.)
 */
export interface Fact<TContent = unknown> {
  /**
   * The fact, across its revisions: superseding keeps it. (For a fact that
   * was never superseded it is also its one revision's id.)
   */
  readonly id: FactId;
  /** This revision's own id; absent where it equals `id`. */
  readonly revisionId?: string;
  /**
   * Fact type identifier. Packs define their own; a few general-purpose
   * names are conventional ('working-memory', 'user-profile', 'summary',
   * 'entity-index').
   */
  readonly type: string;
  readonly scope: MemoryScope;
  /** The revision number within the fact: 1, then one more per supersede or verify. */
  readonly version: number;
  readonly createdAt: Timestamp;
  readonly updatedAt?: Timestamp;
  readonly content?: TContent;
  readonly contentRef?: string;
  readonly contentHash?: string;
  readonly size?: number;
  readonly embeddingModel?: string;
  readonly retention?: Retention;
  readonly source?: Source;
  readonly causedByLogId?: readonly string[];
  /** The revision this one replaced (PROV `wasRevisionOf`). */
  readonly supersedes?: FactId;
  /** How far it's trusted. Absent on facts from before trust was recorded: `asserted`. */
  readonly trust?: FactTrust;
  readonly verifiedBy?: string;
  readonly verifiedAt?: Timestamp;
  readonly attributedTo?: FactAttribution;
  readonly generatedBy?: FactGeneratedBy;
  readonly subjects?: readonly FactSubject[];
  /** When the fact is true in the world (application time); absent: always. */
  readonly validFrom?: Timestamp;
  readonly validUntil?: Timestamp;
  /** When it was said or seen. */
  readonly observedAt?: Timestamp;
  /** When this revision stopped being current (record time), by whom, and why; absent: current. */
  readonly invalidatedAt?: Timestamp;
  readonly invalidatedBy?: string;
  readonly invalidationReason?: FactInvalidationReason;
  /** `pending` while a person must approve it: a pending fact is never retrieved. */
  readonly review?: 'pending';
  /**
   * When this revision stops being readable: from its retention
   * (`keepUntil`, or `keepDays` from the fact's first write), or an
   * agent-remembered fact's unverified window. No read returns it after.
   * Absent: it doesn't expire.
   */
  readonly expiresAt?: Timestamp;
}

// ============ errors.ts ============

/**
 * Errors emitted by the memory subsystem. Every variant carries a `code`
 * for pattern matching. (The variants before `ErasureInProgressError` are
 * the diff's context, written from the package's shapes.)
 */
export type MemoryError =
  | InvalidLogEntryError
  | InvalidFactError
  | FactNotFoundError
  | LogNotFoundError
  | EmbeddingError
  | RefreshHandlerMissingError
  | RetentionViolationError
  | ErasureInProgressError
  | PersistenceError;

export interface InvalidLogEntryError {
  readonly code: 'invalid-log-entry';
  readonly message: string;
  readonly reason: string;
}

export interface InvalidFactError {
  readonly code: 'invalid-fact';
  readonly message: string;
  readonly reason: string;
}

export interface FactNotFoundError {
  readonly code: 'fact-not-found';
  readonly message: string;
  readonly factId: FactId;
}

export interface LogNotFoundError {
  readonly code: 'log-not-found';
  readonly message: string;
  readonly logEntryId: LogEntryId;
}

export interface RefreshHandlerMissingError {
  readonly code: 'refresh-handler-missing';
  readonly message: string;
  readonly handlerId: string;
}

export interface RetentionViolationError {
  readonly code: 'retention-violation';
  readonly message: string;
  readonly factId: FactId;
  readonly reason: 'legal-hold' | 'keep-until' | 'keep-days';
}

/**
 * A write for a person (by scope or subject), or a conversation, that an
 * erasure in progress holds: nothing new lands for them until it
 * completes.
 */
export interface ErasureInProgressError {
  readonly code: 'erasure-in-progress';
  readonly message: string;
}

export interface PersistenceError {
  readonly code: 'persistence-error';
  readonly message: string;
  readonly cause: unknown;
}

// ============ fusion.ts ============

/** One fused item: its score and its 1-based rank in each leg that found it. */
export interface Fused<T> {
  readonly item: T;
  /** `Σ 1 / (k + rank)` over the legs that found it. */
  readonly score: number;
  /** Its rank in each leg, by the leg's name; absent where that leg didn't find it. */
  readonly ranks: Readonly<Record<string, number>>;
}

// ============ log.ts ============

/**
 * Kind identifiers for LogEntry. (The diff exports `LOG_KINDS` without
 * its members; these are the 0.1.5 package's.)
 */
export const LOG_KINDS = [
  'user-message',
  'agent-message',
  'system-message',
  'tool-call',
  'tool-result',
  'internal-thought',
  'retrieval',
  'artifact-produced',
  'event-emitted',
  'event-received',
  'guardrail-triggered',
  'wait-suspended',
  'wait-resumed',
] as const;

export type LogKind = (typeof LOG_KINDS)[number];

/**
 * One event in the append-only log for a run, hash-chained to the one
 * before. (The fields before `hashVersion` are the diff's context.)
 */
export interface LogEntry {
  readonly id: LogEntryId;
  readonly kind: LogKind;
  readonly scope: MemoryScope;
  readonly runId: RunId;
  readonly actor?: string;
  readonly timestamp: Timestamp;
  /** Monotonic sequence within `(tenantId, runId)`. */
  readonly sequence: number;
  readonly payload?: unknown;
  readonly contentHash?: string;
  readonly prevHash: string;
  readonly entryHash: string;
  readonly causedByLogId?: string;
  /**
   * How `entryHash` was computed. `2`: over the payload's hash
   * (`contentHash`), so a payload cleared by an erasure still verifies.
   * `1` (entries from before): over the payload itself. Absent: 1.
   */
  readonly hashVersion?: 1 | 2;
  /** When an erasure cleared `payload` (its `contentHash` stays). */
  readonly payloadErasedAt?: Timestamp;
  /**
   * The salt of a v2 entry's `contentHash`: the hash is over the payload
   * and this salt, so it can't confirm a guessed payload. An erasure
   * clears it with the payload.
   */
  readonly payloadSalt?: string;
}

// ============ retrieval.ts (the diff's context, written from the package's shape) ============

/** A retrieval search's hit: a fact and its score. */
export interface RetrievalHit<TContent = unknown> {
  readonly fact: Fact<TContent>;
  readonly score: number;
}

// ============ recall.ts ============

/**
 * One message of an earlier conversation, as recall finds it: a user's
 * message or an agent's answer (tool calls and the turns that made them
 * are not indexed), with the indexed messages either side for context.
 */
export interface RecalledMessage {
  readonly conversationId: string;
  readonly sequence: number;
  readonly role: 'user' | 'agent';
  readonly text: string;
  readonly createdAt: Timestamp;
  /** The agent the conversation was with. */
  readonly agentId: string;
  readonly projectId?: string;
  /** The conversation's end user (the app's own id for them). */
  readonly participantId?: string;
  /** The Kindgi user its turns acted for, when one did. */
  readonly userId?: string;
  /** The indexed message (of the roles recalled) just before it in its conversation, if any. */
  readonly before?: { readonly role: 'user' | 'agent'; readonly text: string };
  /** The indexed message (of the roles recalled) just after it, if any. */
  readonly after?: { readonly role: 'user' | 'agent'; readonly text: string };
}

/** A recalled message and how well it matched (a full-text rank or a cosine similarity). */
export interface RecallHit {
  readonly message: RecalledMessage;
  readonly score?: number;
}

/**
 * What one recall narrows to, within what the readers may see. Always
 * one agent's conversations. Every other field given must match.
 */
export interface RecallSelection {
  readonly agentId: string;
  /** Only this conversation (with `beforeSequence`: its messages older than that). */
  readonly conversationId?: string;
  readonly beforeSequence?: number;
  /** Every conversation but this one. */
  readonly excludeConversationId?: string;
  readonly participantId?: string;
  readonly userId?: string;
  readonly projectId?: string;
  /** Conversations whose segment path starts with this one (the same customer). */
  readonly segmentsPrefix?: readonly ScopeSegment[];
}

export interface SearchConversationsInput {
  readonly tenantId: TenantId;
  /** What the reader may see (`isRecallReadableBy`), applied in the query before the limit. */
  readonly readers: MemoryReaders;
  /** The narrowings, merged: a message matching any of them. */
  readonly selections: readonly RecallSelection[];
  /** `list`: the newest first, no query. `keyword`: full-text. `semantic`: by meaning. */
  readonly mode: 'list' | 'keyword' | 'semantic';
  /**
   * Whose messages: the hits and their neighbours alike. Default
   * `['user']`, the people's own words; an agent's earlier answers only
   * when asked for.
   */
  readonly roles?: readonly ('user' | 'agent')[];
  readonly query?: string;
  /** For `semantic`: the registry the query is embedded with. */
  readonly embeddingRegistry?: EmbeddingProviderRegistry;
  readonly embeddingModel?: string;
  readonly topK: number;
}

/** The containers a recalled message's conversation is in, as the recall guard sees them. */
export interface RecallRow {
  readonly conversationId: string;
  readonly projectId?: string;
  readonly participantId?: string;
  readonly userId?: string;
}

// ============ remember.ts ============

/**
 * What an agent remembers through its `remember` tool: a short text, and
 * optionally the slot (`key`) it fills. A new value for a slot the same
 * agent filled before, for the same type and scope, is that fact's next
 * revision.
 */
export interface RememberedContent {
  readonly text: string;
  readonly key?: string;
}

/** Why a remembered fact waits for a person before any read sees it. */
export type RememberReviewReason =
  /** The declared scope reaches beyond one person (`same-project`, `tenant`). */
  | 'wide-scope'
  /** The text reads like an instruction (always/never/ignore, a URL, a tool name). */
  | 'instruction-like';

/**
 * One `remember` call, as the agent layer builds it from the agent's
 * declaration and the run. The model chooses only the type (among those
 * declared), the text, the slot and how long it's true; never the scope,
 * the trust or whom it's attributed to.
 */
export interface RememberFactInput {
  readonly tenantId: TenantId;
  /** Where it's stored: the declaration's scope, filled from the run. */
  readonly scope: MemoryScope;
  readonly type: string;
  readonly content: RememberedContent;
  /** Whom it's about: the conversation's end user, else the run's user. */
  readonly subjects: readonly FactSubject[];
  /** The agent version that remembered it. */
  readonly agent: { readonly id: string; readonly version: string };
  /**
   * The call that wrote it. A second call with the same run and tool call
   * (a step re-run after a crash) returns the fact the first one wrote.
   */
  readonly generatedBy: {
    readonly runId: string;
    readonly stepId?: string;
    readonly toolCallId: string;
  };
  /** How long it's kept unless a person verifies it (retention `keepDays`). */
  readonly keepDays: number;
  /** When it stops being true in the world, if the model said so. */
  readonly validUntil?: Timestamp;
  /** Present when a person must approve it first; no read sees it until then. */
  readonly review?: { readonly reasons: readonly RememberReviewReason[] };
}

export interface RememberFactResult {
  /** The revision written: `trust: unverified`, `review: pending` while it waits. */
  readonly fact: Fact<RememberedContent>;
  /**
   * `created`: a new fact. `superseded`: the next revision of the fact
   * that held the slot. `replayed`: this call had already written it.
   */
  readonly outcome: 'created' | 'superseded' | 'replayed';
  /** The approval a pending fact waits on. */
  readonly approvalId?: string;
}

/**
 * Agent memory writes (the `remember` tool). Optional on the agent
 * bindings: a host without it offers the tool, and a call says it
 * can't remember.
 */
export interface MemoryRememberBinding {
  remember(input: RememberFactInput): Promise<Result<RememberFactResult, MemoryError>>;
}

// ============ memory-binding.ts ============

/**
 * Caller-plugged data-access surface for the memory subsystem. Every
 * method is tenant-scoped via `input.tenantId`. (`searchByKeyword`,
 * `searchBySemantic`, `appendLog` and `readLog` are the diff's context,
 * written from the package's shapes.)
 */
export interface MemoryQueryBinding {
  /**
   * List facts filtered by tenant, type, and scope, capped by `limit`
   * (no pagination cursor): each fact's current revision, never one
   * pending review, and only what `readers` may see (the guard, applied
   * in the query before the limit).
   */
  listFacts<TContent = unknown>(
    input: ListFactsInput,
  ): Promise<Result<readonly Fact<TContent>[], MemoryError>>;

  /** Full-text keyword search over facts. */
  searchByKeyword<TContent = unknown>(
    input: SearchByKeywordInput,
  ): Promise<Result<readonly RetrievalHit<TContent>[], MemoryError>>;

  /** Semantic-search facts via a caller-supplied `EmbeddingProviderRegistry`. */
  searchBySemantic<TContent = unknown>(
    input: SearchBySemanticInput,
  ): Promise<Result<readonly RetrievalHit<TContent>[], MemoryError>>;

  /**
   * Recall messages of earlier conversations (a retrieval intent with
   * `source: 'conversations'`): what `readers` may recall
   * (`isRecallReadableBy`), narrowed by `selections`, newest first
   * (`list`), by full-text rank (`keyword`) or by meaning (`semantic`).
   * Optional: without it, such an intent recalls nothing and its turn
   * journals why. `semantic` without embeddings answers
   * `embedding-unavailable`, as fact search does.
   */
  searchConversations?(
    input: SearchConversationsInput,
  ): Promise<Result<readonly RecallHit[], MemoryError>>;

  /**
   * Append one entry to the run's hash-chained log. The implementation
   * assigns `sequence` and `prevHash` / `entryHash` atomically; the
   * returned `LogEntry` is the entry as stored.
   */
  appendLog(input: AppendLogInput): Promise<Result<LogEntry, MemoryError>>;

  /**
   * The run's log entries in sequence order; `sinceSequence` is an
   * inclusive lower bound.
   */
  readLog(input: ReadLogInput): Promise<Result<readonly LogEntry[], MemoryError>>;
}

export interface ListFactsInput {
  readonly tenantId: TenantId;
  readonly type?: string;
  /** Narrows within what `readers` may see: every given key must match. */
  readonly scope?: Partial<MemoryScope>;
  /**
   * What the reader may see (the scope guard), applied inside the query
   * before any limit. Absent: only tenant-wide facts.
   */
  readonly readers?: MemoryReaders;
  readonly limit?: number;
  /** Ignored: a list holds each fact's current revision. */
  readonly latestOnly?: boolean;
}

export interface SearchByKeywordInput {
  readonly tenantId: TenantId;
  readonly query: string;
  readonly type?: string;
  readonly scope?: Partial<MemoryScope>;
  /**
   * What the reader may see (the scope guard), applied inside the query
   * before any limit. Absent: only tenant-wide facts.
   */
  readonly readers?: MemoryReaders;
  readonly topK?: number;
}

export interface SearchBySemanticInput {
  readonly tenantId: TenantId;
  readonly query: string;
  readonly embeddingRegistry: EmbeddingProviderRegistry;
  /** Which registered embedding model to use (written from the package's shape). */
  readonly embeddingModel?: string;
  readonly type?: string;
  readonly scope?: Partial<MemoryScope>;
  /**
   * What the reader may see (the scope guard), applied inside the query
   * before any limit. Absent: only tenant-wide facts.
   */
  readonly readers?: MemoryReaders;
  readonly topK?: number;
}

/** (Written from the package's shape.) */
export interface AppendLogInput {
  readonly tenantId: TenantId;
  readonly runId: RunId;
  readonly kind: LogKind;
  readonly scope: MemoryScope;
  readonly actor?: string;
  readonly payload?: unknown;
  readonly causedByLogId?: string;
}

/** (Written from the package's shape.) */
export interface ReadLogInput {
  readonly tenantId: TenantId;
  readonly runId: RunId;
  readonly sinceSequence?: number;
}
