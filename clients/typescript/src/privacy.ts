// A person's erasure and subject access export.

import { type RequestOptions, segment } from './core.js';
import { Conversations } from './conversations.js';
import type { AccessRequest, BodyOf, Erasure, ErasurePreview, QueryOf } from './types.js';

/** `/v1/erasures` and `/v1/subject-access-requests`. */
export class Privacy extends Conversations {
  /** Erase everything about a person (or one conversation), on a worker. */
  startErasure(body: BodyOf<'/v1/erasures', 'post'>, options?: RequestOptions): Promise<Erasure> {
    return this.json('POST', '/v1/erasures', { json: body }, options);
  }

  /** What an erasure would erase now, per kind; nothing is started or written (`dry_run`). */
  previewErasure(
    body: BodyOf<'/v1/erasures', 'post'>,
    options?: RequestOptions,
  ): Promise<ErasurePreview> {
    return this.json('POST', '/v1/erasures', { query: { dry_run: true }, json: body }, options);
  }

  /** An erasure's status, progress and, once done, its receipt. */
  getErasure(erasureId: string, options?: RequestOptions): Promise<Erasure> {
    return this.json('GET', `/v1/erasures/${segment(erasureId)}`, {}, options);
  }

  /** Ask for an export of everything kindmem holds about a person (a worker builds it). */
  requestAccessExport(
    body: BodyOf<'/v1/subject-access-requests', 'post'>,
    options?: RequestOptions,
  ): Promise<AccessRequest> {
    return this.json('POST', '/v1/subject-access-requests', { json: body }, options);
  }

  /** A subject access request's status and, once built, its download links. */
  getAccessRequest(requestId: string, options?: RequestOptions): Promise<AccessRequest> {
    return this.json('GET', `/v1/subject-access-requests/${segment(requestId)}`, {}, options);
  }

  /**
   * The export's bytes (JSON, or a zip of Markdown memory files); `token` is the one in the
   * request's download links. `LinkExpired` once it expired.
   */
  async downloadAccessExport(
    requestId: string,
    query: QueryOf<'/v1/subject-access-requests/{request_id}/download', 'get'>,
    options?: RequestOptions,
  ): Promise<Uint8Array> {
    const path = `/v1/subject-access-requests/${segment(requestId)}/download`;
    // the JSON export or the zip, whichever `export` names
    return (await this.request('GET', path, { query, accept: '*/*' }, options)).bytes;
  }
}
