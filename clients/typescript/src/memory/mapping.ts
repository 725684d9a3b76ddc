// kindmem's answers in the seed's shapes (snake_case to the seed's camelCase, nulls to absent
// fields), the run log's kinds between the two vocabularies, and kindmem's errors as the seed's
// `MemoryError` variants.

import { KindmemError } from '../errors.js';
import type * as api from '../types.js';
import type {
  Fact,
  FactAttribution,
  FactId,
  FactInvalidationReason,
  FactSubject,
  FactTrust,
  LogEntry,
  LogEntryId,
  LogKind,
  MemoryError,
  MemoryScope,
  OrgId,
  ProjectId,
  RecalledMessage,
  Retention,
  RunId,
  SessionId,
  Source,
  TenantId,
  ThreadId,
  Timestamp,
  UserId,
} from './seed.js';

/** `{...}` with the entries whose value is null or undefined left out (the seed's "absent"). */
function present<T extends Record<string, unknown>>(
  fields: T,
): { [K in keyof T]?: NonNullable<T[K]> } {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== null && value !== undefined),
  ) as { [K in keyof T]?: NonNullable<T[K]> };
}

const stamp = (value: string | null | undefined) => (value ?? undefined) as Timestamp | undefined;

export function seedScope(scope: api.Scope, tenantId: TenantId): MemoryScope {
  return present({
    tenantId,
    orgId: scope.org_id as OrgId | undefined,
    projectId: scope.project_id as ProjectId | undefined,
    userId: scope.user_id as UserId | undefined,
    participantId: scope.participant_id,
    threadId: scope.thread_id as ThreadId | undefined,
    sessionId: scope.session_id as SessionId | undefined,
  }) as MemoryScope;
}

function seedRetention(retention: api.Fact['retention']): Retention | undefined {
  const fields = present({
    keepUntil: stamp(retention.keep_until),
    keepDays: retention.keep_days,
    legalHold: retention.legal_hold ? true : undefined,
  });
  return Object.keys(fields).length > 0 ? fields : undefined;
}

/** A kindmem fact (one revision) as the seed's `Fact`. */
export function seedFact<TContent>(fact: api.Fact, tenantId: TenantId): Fact<TContent> {
  const generated = fact.generated_by as {
    run_id: string;
    step_id: string | null;
    tool_call_id: string | null;
  } | null;
  const attributed = fact.attributed_to;
  return present({
    id: fact.id as FactId,
    revisionId: fact.revision_id === fact.id ? undefined : fact.revision_id,
    type: fact.type,
    scope: seedScope(fact.scope, tenantId),
    version: fact.version,
    createdAt: fact.created_at as Timestamp,
    updatedAt: stamp(fact.updated_at),
    content: fact.content as TContent,
    contentHash: fact.content_hash,
    retention: seedRetention(fact.retention),
    source: (fact.source ?? undefined) as Source | undefined,
    causedByLogId: fact.caused_by_log_id.length > 0 ? fact.caused_by_log_id : undefined,
    supersedes: (fact.supersedes ?? undefined) as FactId | undefined,
    trust: fact.trust as FactTrust,
    verifiedBy: fact.verified_by,
    verifiedAt: stamp(fact.verified_at),
    attributedTo: present({
      kind: attributed.kind as FactAttribution['kind'],
      id: attributed.id,
      agentVersion: attributed.agent_version,
    }) as FactAttribution,
    generatedBy: generated
      ? present({
          runId: generated.run_id,
          stepId: generated.step_id,
          toolCallId: generated.tool_call_id,
        })
      : undefined,
    subjects: fact.subjects.map((s) => ({ kind: s.kind, id: s.id }) as FactSubject),
    validFrom: stamp(fact.valid_from),
    validUntil: stamp(fact.valid_until),
    observedAt: stamp(fact.observed_at),
    invalidatedAt: stamp(fact.invalidated_at),
    invalidatedBy: fact.invalidated_by,
    invalidationReason: (fact.invalidation_reason ?? undefined) as
      FactInvalidationReason | undefined,
    // the seed's `review` is `pending` or absent; a reviewer's approval reads as absent
    review: fact.review === 'pending' ? ('pending' as const) : undefined,
    expiresAt: stamp(fact.expires_at),
  }) as Fact<TContent>;
}

export function seedMessage(message: api.RecalledMessage): RecalledMessage {
  const neighbour = (n: api.RecalledMessage['before']) =>
    n ? { role: n.role as 'user' | 'agent', text: n.text } : undefined;
  return present({
    conversationId: message.conversation_id,
    sequence: message.sequence,
    role: message.role as 'user' | 'agent',
    text: message.text,
    createdAt: message.created_at as Timestamp,
    agentId: message.agent_id,
    projectId: message.project_id,
    participantId: message.participant_id,
    userId: message.user_id,
    before: neighbour(message.before),
    after: neighbour(message.after),
  }) as RecalledMessage;
}

// ---- the run log -------------------------------------------------------------------------

/**
 * kindmem's log kinds are a vocabulary of their own (runlog/chain.py); each of the seed's kinds
 * is stored as the nearest, and the seed's own kind travels in the payload's envelope.
 */
const STORED_KIND: Readonly<Record<LogKind, api.LogKind>> = {
  'user-message': 'turn',
  'agent-message': 'turn',
  'system-message': 'turn',
  'tool-call': 'tool-call',
  'tool-result': 'tool-result',
  'internal-thought': 'decision',
  retrieval: 'memory-read',
  'artifact-produced': 'note',
  'event-emitted': 'note',
  'event-received': 'note',
  'guardrail-triggered': 'note',
  'wait-suspended': 'note',
  'wait-resumed': 'note',
};

/** A kind read back without its envelope (written by another client, or erased). */
const SEED_KIND: Readonly<Record<string, LogKind>> = {
  turn: 'user-message',
  'tool-call': 'tool-call',
  'tool-result': 'tool-result',
  'memory-read': 'retrieval',
  'memory-write': 'artifact-produced',
  decision: 'internal-thought',
  error: 'guardrail-triggered',
  note: 'event-emitted',
};

/**
 * The key of the envelope a seed entry is stored in: kindmem's payload is a JSON object, the
 * seed's anything (or nothing), and the seed's kind, actor and scope have no column of kindmem's.
 */
export const ENVELOPE = '@kindgi/memory';

interface Envelope {
  readonly kind: LogKind;
  readonly actor?: string;
  readonly scope?: Omit<MemoryScope, 'tenantId'>;
}

/** The kind kindmem stores a seed kind as; undefined for a kind the seed does not have. */
export function storedKind(kind: LogKind): api.LogKind | undefined {
  return Object.hasOwn(STORED_KIND, kind) ? STORED_KIND[kind] : undefined;
}

export function envelope(
  kind: LogKind,
  scope: MemoryScope,
  actor?: string,
  payload?: unknown,
): object {
  const { tenantId: _tenant, ...where } = scope;
  const head: Envelope = present({ kind, actor, scope: where }) as Envelope;
  return payload === undefined ? { [ENVELOPE]: head } : { [ENVELOPE]: head, payload };
}

function opened(payload: unknown): { head?: Envelope; payload?: unknown } {
  if (typeof payload !== 'object' || payload === null || !(ENVELOPE in payload)) {
    return { payload: payload ?? undefined };
  }
  const { [ENVELOPE]: head, payload: inner } = payload as {
    [ENVELOPE]: Envelope;
    payload?: unknown;
  };
  return { head, payload: inner };
}

export function seedLogEntry(entry: api.LogEntry, tenantId: TenantId): LogEntry {
  const { head, payload } = opened(entry.payload);
  return present({
    id: entry.id as LogEntryId,
    kind:
      head?.kind ??
      (Object.hasOwn(SEED_KIND, entry.kind) ? SEED_KIND[entry.kind] : undefined) ??
      'event-emitted',
    scope: { ...head?.scope, tenantId },
    runId: entry.run_id as RunId,
    actor: head?.actor,
    timestamp: entry.created_at as Timestamp,
    sequence: entry.sequence,
    payload,
    contentHash: entry.content_hash,
    prevHash: entry.prev_hash,
    entryHash: entry.entry_hash,
    causedByLogId: entry.caused_by_log_id,
    hashVersion: entry.hash_version as 1 | 2,
    payloadErasedAt: stamp(entry.payload_erased_at),
    payloadSalt: entry.payload_salt,
  }) as LogEntry;
}

// ---- errors ------------------------------------------------------------------------------

/** What the failed call was, for the seed's variants that name it. */
export interface Failed {
  readonly factId?: string;
  /** A write of a fact (`validation-error` is then `invalid-fact`). */
  readonly writesFact?: boolean;
  /** A log append (`validation-error` is then `invalid-log-entry`). */
  readonly writesLog?: boolean;
  /** The embedding model the caller named, for `unknown-embedding-model`. */
  readonly model?: string;
}

function reasonOf(error: KindmemError): string {
  return error.details === null || error.details === undefined
    ? error.message
    : `${error.message} ${JSON.stringify(error.details)}`;
}

const RETENTION_REASONS = ['legal-hold', 'keep-until', 'keep-days'] as const;

/**
 * A kindmem error (or a failure to reach kindmem at all) as the seed's `MemoryError`: the
 * variant of the same meaning where the seed has one, else `persistence-error` with kindmem's
 * error (its `code`, `message`, `details`) as the `cause`.
 */
export function memoryError(error: unknown, failed: Failed = {}): MemoryError {
  if (!(error instanceof KindmemError)) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      code: 'persistence-error',
      message: `kindmem could not be reached: ${message}`,
      cause: error,
    };
  }
  switch (error.code) {
    case 'fact-not-found':
      return {
        code: 'fact-not-found',
        message: error.message,
        factId: (failed.factId ?? '') as FactId,
      };
    case 'invalid-fact':
      return { code: 'invalid-fact', message: error.message, reason: reasonOf(error) };
    case 'validation-error':
      if (failed.writesLog)
        return { code: 'invalid-log-entry', message: error.message, reason: reasonOf(error) };
      if (failed.writesFact)
        return { code: 'invalid-fact', message: error.message, reason: reasonOf(error) };
      break;
    case 'retention-violation': {
      const given = (error.details as { reason?: unknown } | null)?.reason;
      const reason = RETENTION_REASONS.find((r) => r === given) ?? 'legal-hold';
      return {
        code: 'retention-violation',
        message: error.message,
        factId: (failed.factId ?? '') as FactId,
        reason,
      };
    }
    case 'erasure-in-progress':
      return { code: 'erasure-in-progress', message: error.message };
    case 'embedding-unavailable':
      // The seed's EmbeddingError for "nothing to embed with": kindmem embeds queries itself,
      // with the one model its vectors are in, and has none wired (or it does not answer).
      return failed.model === undefined
        ? {
            code: 'no-embedding-provider',
            message: `kindmem answered embedding-unavailable: ${error.message}`,
          }
        : {
            code: 'unknown-embedding-model',
            message: `kindmem answered embedding-unavailable: ${error.message}`,
            model: failed.model,
            known: [],
          };
  }
  return {
    code: 'persistence-error',
    message: `kindmem answered ${error.code}: ${error.message}`,
    cause: error.toJSON(),
  };
}
