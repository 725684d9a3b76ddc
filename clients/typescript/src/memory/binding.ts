// The seed's `MemoryQueryBinding` and `MemoryRememberBinding` over kindmem's REST API.

import type { KindmemClient } from '../client.js';
import type * as api from '../types.js';
import { narrowing, seedReaders } from './guards.js';
import {
  envelope,
  type Failed,
  memoryError,
  seedFact,
  seedLogEntry,
  seedMessage,
  storedKind,
} from './mapping.js';
import type {
  AppendLogInput,
  Fact,
  Fused,
  ListFactsInput,
  LogEntry,
  MemoryError,
  MemoryQueryBinding,
  MemoryReaders,
  MemoryRememberBinding,
  MemoryScope,
  ReadLogInput,
  RecallHit,
  RecallSelection,
  RememberedContent,
  RememberFactInput,
  RememberFactResult,
  Result,
  RetrievalHit,
  SearchByKeywordInput,
  SearchBySemanticInput,
  SearchConversationsInput,
  TenantId,
} from './seed.js';

export interface KindmemMemoryOptions {
  /**
   * The tenant id the calling code passes as `input.tenantId` for this kindmem tenant (its own
   * name for it); default kindmem's tenant id, as `GET /v1/me` names it. Any other is refused.
   */
  readonly tenantId?: string;
}

/** A hybrid search's input: keyword and semantic legs, fused by rank (kindmem's `hybrid`). */
export interface SearchHybridInput extends SearchByKeywordInput {
  readonly embeddingModel?: string;
}

interface Identity {
  readonly tenantId: TenantId;
  readonly readers: MemoryReaders;
  readonly runId: string | null;
}

/** kindmem answers at most this many hits per search (`top_k` 1..100) and facts per page. */
const MAX_TOP_K = 100;
const MAX_PAGE = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const ok = <T>(value: T): Result<T, MemoryError> => ({ kind: 'ok', value });
const err = <T>(error: MemoryError): Result<T, MemoryError> => ({ kind: 'err', error });

function refused(message: string, details: unknown): MemoryError {
  // kindmem's own answer to a call reaching past the binding, as the seed's catch-all variant
  return { code: 'persistence-error', message, cause: { code: 'forbidden', message, details } };
}

/**
 * The seed's bindings (`MemoryQueryBinding`, `MemoryRememberBinding`) backed by kindmem: code
 * written against `@kindgi/memory` runs on kindmem with only this object's construction
 * changed. `client` carries the credential (a run token, for `remember` and the run's log; an
 * app or user key reads too).
 *
 * - **Readers come from the credential**, never from the caller alone: kindmem applies the
 *   credential's in SQL before any limit. The `readers` each call is handed narrow them: they
 *   are sent with the read, and kindmem returns what both may read, guarded in the same query
 *   before its limit (no readers at all: only tenant-wide facts, as the seed says). A set that
 *   reaches past the credential's is intersected with them, never widened; one equal to them
 *   (`GET /v1/me`, asked once) or `all` narrows nothing and is not sent.
 * - **Embeddings are kindmem's**: a semantic query is embedded by kindmem with the model its
 *   vectors are in, not by `embeddingRegistry`; an `embeddingModel` other than kindmem's is
 *   `unknown-embedding-model`, and kindmem without an embedder (`embedding-unavailable`) is the
 *   seed's `no-embedding-provider`: never an empty list.
 * - **`remember` sends what the model chose** (type, text, slot, `validUntil`, the step and the
 *   tool call): the scope, subjects, agent, `keepDays` and review are what kindmem's agent
 *   declaration and run say, as the answer's fact shows. The same tool call again answers the
 *   first result, `replayed`.
 * - **The run log** keeps the seed's kind, actor and scope in its payload's envelope (kindmem's
 *   kinds are a vocabulary of their own; each seed kind is stored as the nearest) and gives the
 *   chain as kindmem keeps it: `sequence` from 1, `prevHash` 64 zeros first, hash version 2.
 */
export class KindmemMemory implements MemoryQueryBinding, MemoryRememberBinding {
  readonly #client: KindmemClient;
  readonly #tenantId: string | undefined;
  #identity: Promise<Identity> | undefined;
  #embeddingModel: Promise<string | null> | undefined;

  constructor(client: KindmemClient, options: KindmemMemoryOptions = {}) {
    this.#client = client;
    this.#tenantId = options.tenantId;
  }

  /** The credential's readers, in the seed's shape: what to hand this binding's reads. */
  async readers(): Promise<MemoryReaders> {
    return (await this.#who()).readers;
  }

  /** The tenant id this binding answers for (the one its calls must pass). */
  async tenantId(): Promise<TenantId> {
    return (await this.#who()).tenantId;
  }

  listFacts<TContent = unknown>(
    input: ListFactsInput,
  ): Promise<Result<readonly Fact<TContent>[], MemoryError>> {
    return this.#guarded(input.tenantId, {}, async (who) => {
      const readers = narrowed(input.readers, who);
      const query = scopeQuery(input.scope, who.tenantId);
      const limit = input.limit === undefined ? Number.POSITIVE_INFINITY : Math.floor(input.limit);
      if (query === null || limit <= 0) return ok([]);
      const facts: Fact<TContent>[] = [];
      for await (const found of this.#client.iterFacts({
        ...query,
        type: input.type,
        ...(readers ? { readers: JSON.stringify(readers) } : {}),
        limit: Math.min(limit, MAX_PAGE),
      })) {
        facts.push(seedFact<TContent>(found, who.tenantId));
        if (facts.length >= limit) break;
      }
      return ok(facts);
    });
  }

  searchByKeyword<TContent = unknown>(
    input: SearchByKeywordInput,
  ): Promise<Result<readonly RetrievalHit<TContent>[], MemoryError>> {
    return this.#search('keyword', input, undefined, retrievalHit<TContent>);
  }

  searchBySemantic<TContent = unknown>(
    input: SearchBySemanticInput,
  ): Promise<Result<readonly RetrievalHit<TContent>[], MemoryError>> {
    return this.#search('semantic', input, input.embeddingModel, retrievalHit<TContent>);
  }

  /**
   * Not the seed's interface, but its `Fused` shape: kindmem's hybrid search (keyword and
   * semantic legs fused by reciprocal rank), each hit its fused score and its rank in each leg.
   */
  searchHybrid<TContent = unknown>(
    input: SearchHybridInput,
  ): Promise<Result<readonly Fused<Fact<TContent>>[], MemoryError>> {
    return this.#search('hybrid', input, input.embeddingModel, fusedHit<TContent>);
  }

  searchConversations(
    input: SearchConversationsInput,
  ): Promise<Result<readonly RecallHit[], MemoryError>> {
    const failed: Failed = { model: input.embeddingModel };
    return this.#guarded(input.tenantId, failed, async (who) => {
      const readers = narrowed(input.readers, who);
      const topK = Math.floor(input.topK);
      if (input.selections.length === 0 || topK <= 0) return ok([]);
      if (input.mode === 'semantic') {
        const wrongModel = await this.#modelRefusal(input.embeddingModel);
        if (wrongModel) return err(wrongModel);
      }
      const answer = await this.#client.recall({
        selections: input.selections.map(selection),
        mode: input.mode,
        query: input.query,
        roles: input.roles ? [...input.roles] : undefined,
        top_k: Math.min(topK, MAX_TOP_K),
        readers,
      });
      return ok(
        answer.hits.map((hit): RecallHit => {
          const message = seedMessage(hit.message);
          return hit.score === null ? { message } : { message, score: hit.score };
        }),
      );
    });
  }

  appendLog(input: AppendLogInput): Promise<Result<LogEntry, MemoryError>> {
    return this.#guarded(input.tenantId, { writesLog: true }, async (who) => {
      const kind = storedKind(input.kind);
      if (kind === undefined) {
        return err(invalidLogEntry(`Unknown log kind ${JSON.stringify(input.kind)}.`));
      }
      let payload: object;
      try {
        payload = JSON.parse(
          JSON.stringify(envelope(input.kind, input.scope, input.actor, input.payload)),
        );
      } catch (cause) {
        return err(invalidLogEntry(`The payload is not JSON: ${String(cause)}`));
      }
      const entry = await this.#client.appendLog(input.runId, {
        kind,
        payload,
        caused_by_log_id: input.causedByLogId,
      });
      return ok(seedLogEntry(entry, who.tenantId));
    });
  }

  readLog(input: ReadLogInput): Promise<Result<readonly LogEntry[], MemoryError>> {
    return this.#guarded(input.tenantId, {}, async (who) => {
      const after = Math.max(0, Math.floor(input.sinceSequence ?? 1) - 1);
      const entries: LogEntry[] = [];
      for await (const entry of this.#client.iterLog(input.runId, {
        after_sequence: after,
        limit: 1000,
      })) {
        entries.push(seedLogEntry(entry, who.tenantId));
      }
      return ok(entries);
    });
  }

  remember(input: RememberFactInput): Promise<Result<RememberFactResult, MemoryError>> {
    return this.#guarded(input.tenantId, { writesFact: true }, async (who) => {
      if (who.runId !== null && input.generatedBy.runId !== who.runId) {
        return err({
          code: 'invalid-fact',
          message: 'The memory names another run than this binding’s run token.',
          reason: `generatedBy.runId is ${input.generatedBy.runId}; the run token is run ${who.runId}`,
        });
      }
      const answer = await this.#client.remember({
        type: input.type,
        text: input.content.text,
        key: input.content.key,
        valid_until: input.validUntil,
        step_id: input.generatedBy.stepId,
        tool_call_id: input.generatedBy.toolCallId,
      });
      const result: RememberFactResult = {
        fact: seedFact<RememberedContent>(answer.fact, who.tenantId),
        // The seed knows no `unchanged` (the person's memory already held the value): like a
        // replay, nothing was written and the existing fact comes back.
        outcome: answer.outcome === 'unchanged' ? 'replayed' : answer.outcome,
        ...(answer.approval_id ? { approvalId: answer.approval_id } : {}),
      };
      return ok(result);
    });
  }

  // ---- what every call shares ---------------------------------------------------------------

  async #search<TContent, THit>(
    mode: 'keyword' | 'semantic' | 'hybrid',
    input: SearchByKeywordInput & { readonly embeddingModel?: string },
    model: string | undefined,
    hitOf: (hit: api.SearchHit, fact: Fact<TContent>) => THit,
  ): Promise<Result<readonly THit[], MemoryError>> {
    return this.#guarded(input.tenantId, { model }, async (who) => {
      const readers = narrowed(input.readers, who);
      const scope = scopeQuery(input.scope, who.tenantId);
      const topK = Math.floor(input.topK ?? 10);
      if (scope === null || topK <= 0) return ok([]);
      if (mode !== 'keyword') {
        const wrongModel = await this.#modelRefusal(model);
        if (wrongModel) return err(wrongModel);
      }
      const answer = await this.#client.searchFacts({
        query: input.query,
        mode,
        type: input.type,
        scope: Object.keys(scope).length > 0 ? scope : undefined,
        top_k: Math.min(topK, MAX_TOP_K),
        readers,
      });
      return ok(answer.hits.map((hit) => hitOf(hit, seedFact<TContent>(hit.fact, who.tenantId))));
    });
  }

  /**
   * Run `body` with the credential's identity, once `tenantId` is checked to be the one this
   * binding answers for; whatever fails on the way (kindmem's error answers, the network) is an
   * `err` of the seed's vocabulary, never a throw.
   */
  async #guarded<T>(
    tenantId: string,
    failed: Failed,
    body: (who: Identity) => Promise<Result<T, MemoryError>>,
  ): Promise<Result<T, MemoryError>> {
    try {
      const who = await this.#who();
      if (tenantId !== who.tenantId) {
        const message = `This binding answers for tenant ${who.tenantId}, not ${tenantId}.`;
        return err(refused(message, { tenant_id: tenantId }));
      }
      return await body(who);
    } catch (error) {
      return err(memoryError(error, failed));
    }
  }

  #who(): Promise<Identity> {
    this.#identity ??= this.#client.me().then(
      (me) => ({
        tenantId: (this.#tenantId ?? me.tenant_id) as TenantId,
        readers: seedReaders(me.readers),
        runId: me.run_id,
      }),
      (error: unknown) => {
        this.#identity = undefined; // a failed lookup is not kept: the next call asks again
        throw error;
      },
    );
    return this.#identity;
  }

  /** `unknown-embedding-model` when the caller names a model kindmem does not embed with. */
  async #modelRefusal(model: string | undefined): Promise<MemoryError | undefined> {
    if (model === undefined) return undefined;
    this.#embeddingModel ??= this.#client.capabilities().then(
      (caps) => (caps.embedder.available ? (caps.embedder.model ?? null) : null),
      (error: unknown) => {
        this.#embeddingModel = undefined;
        throw error;
      },
    );
    const served = await this.#embeddingModel;
    if (served === null || served === model) return undefined; // none: kindmem's own answer says so
    return {
      code: 'unknown-embedding-model',
      message: `kindmem embeds with ${served}, not ${model}.`,
      model,
      known: [served],
    };
  }
}

/** The readers a call is handed (none: only tenant-wide facts) as kindmem's narrowing. */
function narrowed(given: MemoryReaders | undefined, who: Identity) {
  return narrowing(given ?? {}, who.readers);
}

function retrievalHit<TContent>(hit: api.SearchHit, fact: Fact<TContent>): RetrievalHit<TContent> {
  return { fact, score: hit.score };
}

function fusedHit<TContent>(hit: api.SearchHit, fact: Fact<TContent>): Fused<Fact<TContent>> {
  return { item: fact, score: hit.score, ranks: hit.ranks };
}

function invalidLogEntry(reason: string): MemoryError {
  return { code: 'invalid-log-entry', message: reason, reason };
}

function selection(s: RecallSelection): api.components['schemas']['SelectionInputRequest'] {
  return {
    agent_id: s.agentId,
    conversation_id: s.conversationId,
    before_sequence: s.beforeSequence,
    exclude_conversation_id: s.excludeConversationId,
    participant_id: s.participantId,
    user_id: s.userId,
    project_id: s.projectId,
    segments_prefix: s.segmentsPrefix?.map((step) => `${step.key}=${step.value}`),
  };
}

/**
 * The seed's scope narrowing as kindmem's query (every given key must match), or `null` when it
 * can match no fact here: another tenant, or an id kindmem could not have given a container.
 */
function scopeQuery(scope: Partial<MemoryScope> | undefined, tenantId: TenantId) {
  if (scope === undefined) return {};
  if (scope.tenantId !== undefined && scope.tenantId !== tenantId) return null;
  for (const id of [scope.orgId, scope.projectId, scope.userId]) {
    if (id !== undefined && !UUID.test(id)) return null;
  }
  const query = {
    org_id: scope.orgId,
    project_id: scope.projectId,
    user_id: scope.userId,
    participant_id: scope.participantId,
    thread_id: scope.threadId,
    session_id: scope.sessionId,
  };
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)) as Partial<
    typeof query
  >;
}
