// Who the credential is, what kindmem can do for it, runs and their hash-chained logs.

import { Core, type RequestOptions, segment } from './core.js';
import type {
  BodyOf,
  Capabilities,
  LogEntry,
  LogPage,
  LogVerify,
  QueryOf,
  RunMint,
  WhoAmI,
} from './types.js';

/** `/v1/me`, `/v1/capabilities`, `/v1/runs` and a run's log. */
export class Runs extends Core {
  /** The caller's principal and the readers its credential grants. */
  me(options?: RequestOptions): Promise<WhoAmI> {
    return this.json('GET', '/v1/me', {}, options);
  }

  /**
   * What this deployment can do for this credential, probed before calling: the retrieval modes
   * that answer now (and the error the others would), the rerankers, the embedder, and which
   * operations the credential may call.
   */
  capabilities(options?: RequestOptions): Promise<Capabilities> {
    return this.json('GET', '/v1/capabilities', {}, options);
  }

  /** Mint a run (an app or user key): its `run` and its short-lived `token`. */
  mintRun(body: BodyOf<'/v1/runs', 'post'>, options?: RequestOptions): Promise<RunMint> {
    return this.json('POST', '/v1/runs', { json: body }, options);
  }

  /** Append an entry (`kind`, a JSON object `payload`) to a run's hash-chained log. */
  appendLog(
    runId: string,
    body: BodyOf<'/v1/runs/{run_id}/log', 'post'>,
    options?: RequestOptions,
  ): Promise<LogEntry> {
    return this.json('POST', `/v1/runs/${segment(runId)}/log`, { json: body }, options);
  }

  /** One page of a run's log, oldest first; `next_after_sequence` pages. */
  readLog(
    runId: string,
    query: QueryOf<'/v1/runs/{run_id}/log', 'get'> = {},
    options?: RequestOptions,
  ): Promise<LogPage> {
    return this.json('GET', `/v1/runs/${segment(runId)}/log`, { query }, options);
  }

  /** Every entry of a run's log after `after_sequence` (0: from the first), page by page. */
  async *iterLog(
    runId: string,
    query: QueryOf<'/v1/runs/{run_id}/log', 'get'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<LogEntry, void, undefined> {
    let after: number | null = query.after_sequence ?? 0;
    while (after !== null) {
      const page = await this.readLog(runId, { ...query, after_sequence: after }, options);
      yield* page.entries;
      after = page.next_after_sequence;
    }
  }

  /** Recompute a run's hash chain: `ok`, its `head`, the first bad sequence. */
  verifyLog(runId: string, options?: RequestOptions): Promise<LogVerify> {
    return this.json('GET', `/v1/runs/${segment(runId)}/log/verify`, {}, options);
  }
}
