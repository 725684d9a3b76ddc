// The tenant's audit events, paged.

import type { RequestOptions } from './core.js';
import { Privacy } from './privacy.js';
import type { AuditEvent, AuditPage, QueryOf } from './types.js';

/** `/v1/audit`. */
export class Audit extends Privacy {
  /**
   * One page of the tenant's audit events, oldest first: the first `limit` after `since_seq`
   * (0: from the first), or without it the most recent `limit`.
   */
  listAudit(query: QueryOf<'/v1/audit', 'get'> = {}, options?: RequestOptions): Promise<AuditPage> {
    return this.json('GET', '/v1/audit', { query }, options);
  }

  /** Every audit event after `since_seq` (default 0) up to now; a short page is the last. */
  async *iterAudit(
    query: QueryOf<'/v1/audit', 'get'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<AuditEvent, void, undefined> {
    const limit = query.limit ?? 100;
    let sinceSeq = query.since_seq ?? 0;
    for (;;) {
      const page = await this.listAudit({ ...query, since_seq: sinceSeq, limit }, options);
      yield* page.events;
      if (page.events.length < limit) return;
      sinceSeq = page.next_since_seq;
    }
  }
}
