// The agent's `remember` tool and the review of what it holds back.

import { type RequestOptions, segment } from './core.js';
import { Facts } from './facts.js';
import type { Approval, ApprovalList, BodyOf, QueryOf, Remember } from './types.js';

/** `/v1/remember` and `/v1/approvals`. */
export class Approvals extends Facts {
  /**
   * The agent's remember tool (a run token): `created`, `superseded` or `replayed` (the same
   * `tool_call_id` again answers the first result); `approval_id` and `review` are set when the
   * memory waits for review.
   */
  remember(body: BodyOf<'/v1/remember', 'post'>, options?: RequestOptions): Promise<Remember> {
    return this.json('POST', '/v1/remember', { json: body }, options);
  }

  /** One page of approvals (pending by default), oldest first. */
  listApprovals(
    query: QueryOf<'/v1/approvals', 'get'> = {},
    options?: RequestOptions,
  ): Promise<ApprovalList> {
    return this.json('GET', '/v1/approvals', { query }, options);
  }

  /** Every approval `listApprovals` would page through. */
  async *iterApprovals(
    query: Omit<QueryOf<'/v1/approvals', 'get'>, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<Approval, void, undefined> {
    let cursor: string | null | undefined;
    do {
      const page = await this.listApprovals({ ...query, ...(cursor ? { cursor } : {}) }, options);
      yield* page.approvals;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /** Approve a pending memory: readable as written; `verify: true` also verifies it. */
  approve(
    approvalId: string,
    body: BodyOf<'/v1/approvals/{approval_id}/approve', 'post'> = {},
    options?: RequestOptions,
  ): Promise<Approval> {
    return this.json(
      'POST',
      `/v1/approvals/${segment(approvalId)}/approve`,
      { json: body },
      options,
    );
  }

  /** Reject a pending memory: it is never readable. */
  reject(
    approvalId: string,
    body: BodyOf<'/v1/approvals/{approval_id}/reject', 'post'> = {},
    options?: RequestOptions,
  ): Promise<Approval> {
    return this.json(
      'POST',
      `/v1/approvals/${segment(approvalId)}/reject`,
      { json: body },
      options,
    );
  }

  /** Approve a pending memory and write it `trust: verified`. */
  approveAndVerify(
    approvalId: string,
    body: BodyOf<'/v1/approvals/{approval_id}/verify', 'post'> = {},
    options?: RequestOptions,
  ): Promise<Approval> {
    return this.json(
      'POST',
      `/v1/approvals/${segment(approvalId)}/verify`,
      { json: body },
      options,
    );
  }
}
