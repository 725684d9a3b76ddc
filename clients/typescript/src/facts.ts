// Facts: written, read, paged, searched, revised, verified and linked.

import { type RequestOptions, segment } from './core.js';
import { Runs } from './runs.js';
import type {
  BodyOf,
  Fact,
  FactImport,
  FactList,
  FactSearch,
  FactWrite,
  LinkChange,
  LinkCreate,
  LinkTraversal,
  QueryOf,
  RevisionList,
} from './types.js';

/** `/v1/facts` and its sub-resources, and fact search. */
export class Facts extends Runs {
  /** Write a fact: `created`, or `unchanged` / `superseded` for content already there. */
  createFact(body: BodyOf<'/v1/facts', 'post'>, options?: RequestOptions): Promise<FactWrite> {
    return this.json('POST', '/v1/facts', { json: body }, options);
  }

  /** One page of the facts the credential may read, newest first; `next_cursor` pages. */
  listFacts(query: QueryOf<'/v1/facts', 'get'> = {}, options?: RequestOptions): Promise<FactList> {
    return this.json('GET', '/v1/facts', { query }, options);
  }

  /** Every fact `listFacts` would page through, following `next_cursor`. */
  async *iterFacts(
    query: Omit<QueryOf<'/v1/facts', 'get'>, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<Fact, void, undefined> {
    let cursor: string | null | undefined;
    do {
      const page = await this.listFacts({ ...query, ...(cursor ? { cursor } : {}) }, options);
      yield* page.facts;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /**
   * Every fact `listFacts` would list with these filters, as the bytes of a zip of memory files
   * (`facts/<id>.md`, the 003 seed's format); `ValidationError` when more match than one import
   * takes (KINDMEM_MEMORY_FILES_MAX): narrow it.
   */
  async exportFacts(
    query: QueryOf<'/v1/facts/export', 'get'> = {},
    options?: RequestOptions,
  ): Promise<Uint8Array> {
    const call = { query, accept: '*/*' }; // the zip, or an error's JSON
    return (await this.request('GET', '/v1/facts/export', call, options)).bytes;
  }

  /**
   * Write memory files as facts, as this credential: a zip of `facts/<id>.md` (bytes), or one
   * memory file (a string). Each file's outcome and its fact here; the scope keys given replace
   * the files' own. All or nothing: `ValidationError` names the file and the field.
   */
  importFacts(
    files: Uint8Array | string,
    query: QueryOf<'/v1/facts/import', 'post'> = {},
    options?: RequestOptions,
  ): Promise<FactImport> {
    const contentType = typeof files === 'string' ? 'text/markdown' : 'application/zip';
    return this.json('POST', '/v1/facts/import', { query, raw: files, contentType }, options);
  }

  /** Keyword, semantic or hybrid (the default) search of the facts it may read. */
  searchFacts(
    body: BodyOf<'/v1/facts/search', 'post'>,
    options?: RequestOptions,
  ): Promise<FactSearch> {
    return this.json('POST', '/v1/facts/search', { json: body }, options);
  }

  /** One fact's current revision (`FactNotFound` if it may not read it). */
  getFact(factId: string, options?: RequestOptions): Promise<Fact> {
    return this.json('GET', `/v1/facts/${segment(factId)}`, {}, options);
  }

  /** Invalidate a fact (`deleted`); `RetentionViolation` where retention forbids it. */
  deleteFact(factId: string, options?: RequestOptions): Promise<FactWrite> {
    return this.json('DELETE', `/v1/facts/${segment(factId)}`, {}, options);
  }

  /** A fact's history, newest first. */
  factRevisions(factId: string, options?: RequestOptions): Promise<RevisionList> {
    return this.json('GET', `/v1/facts/${segment(factId)}/revisions`, {}, options);
  }

  /** A fact's next revision; `Conflict` if `expected_version` is no longer current. */
  supersedeFact(
    factId: string,
    body: BodyOf<'/v1/facts/{fact_id}/supersede', 'post'>,
    options?: RequestOptions,
  ): Promise<FactWrite> {
    return this.json('POST', `/v1/facts/${segment(factId)}/supersede`, { json: body }, options);
  }

  /**
   * A JSON merge patch (RFC 7386) of a fact's `content`, `valid_from` and `valid_until`, written
   * as its next revision: `null` deletes a key, arrays replace, objects merge.
   */
  patchFact(
    factId: string,
    patch: BodyOf<'/v1/facts/{fact_id}', 'patch', 'application/merge-patch+json'>,
    query: QueryOf<'/v1/facts/{fact_id}', 'patch'> = {},
    options?: RequestOptions,
  ): Promise<FactWrite> {
    const call = { query, json: patch, contentType: 'application/merge-patch+json' };
    return this.json('PATCH', `/v1/facts/${segment(factId)}`, call, options);
  }

  /** A new revision with `trust: verified` (a tenant admin or Kindgi user key). */
  verifyFact(
    factId: string,
    body: BodyOf<'/v1/facts/{fact_id}/verify', 'post'> = {},
    options?: RequestOptions,
  ): Promise<FactWrite> {
    return this.json('POST', `/v1/facts/${segment(factId)}/verify`, { json: body }, options);
  }

  /** Link a fact to another readable fact (`created` false if the link was there). */
  linkFacts(
    factId: string,
    body: BodyOf<'/v1/facts/{fact_id}/links', 'post'>,
    options?: RequestOptions,
  ): Promise<LinkCreate> {
    return this.json('POST', `/v1/facts/${segment(factId)}/links`, { json: body }, options);
  }

  /** The facts reached along links from a fact, breadth-first, up to `hops` away. */
  factLinks(
    factId: string,
    query: QueryOf<'/v1/facts/{fact_id}/links', 'get'> = {},
    options?: RequestOptions,
  ): Promise<LinkTraversal> {
    return this.json('GET', `/v1/facts/${segment(factId)}/links`, { query }, options);
  }

  /** Change a link's `confidence`, `provenance`, `valid_at` or `invalid_at` (`null` clears). */
  updateLink(
    factId: string,
    linkId: string,
    changes: BodyOf<'/v1/facts/{fact_id}/links/{link_id}', 'patch'>,
    options?: RequestOptions,
  ): Promise<LinkChange> {
    const path = `/v1/facts/${segment(factId)}/links/${segment(linkId)}`;
    return this.json('PATCH', path, { json: changes }, options);
  }

  /** Remove a link out of a fact (the facts stay); answers the link as it was. */
  deleteLink(factId: string, linkId: string, options?: RequestOptions): Promise<LinkChange> {
    const path = `/v1/facts/${segment(factId)}/links/${segment(linkId)}`;
    return this.json('DELETE', path, {}, options);
  }
}
