// `KindmemClient`: every /v1 route of kindmem, on `fetch`.
//
// One module per group of routes, as the Python client's (`runs.ts`, `facts.ts`,
// `approvals.ts`, `conversations.ts`, `privacy.ts`, `audit.ts`, `webhooks.ts`): each is a class on the one
// before it, down to `Core` (`core.ts`), so the client holds every group's methods under one
// name each, the Python client's names in camelCase. `OPERATIONS` (operations.ts) says which
// method calls which route.

import type { ClientOptions } from './core.js';
import { Webhooks } from './webhooks.js';

/**
 * kindmem's REST API (`/v1`). `token` is an API key (`kmk_...`) or a run token (`kmr_...`);
 * `options.baseUrl` the server. Either falls back to `KINDMEM_TOKEN` / `KINDMEM_URL`. Bodies,
 * query parameters and answers are the API's own (snake_case), typed from its OpenAPI schema.
 * Errors throw `KindmemError` subclasses (errors.ts); a 429 or a 503 `unavailable` is retried
 * after its `Retry-After` within `options.retry`; each attempt times out after
 * `options.timeoutMs`; every method takes `{ signal, timeoutMs }` last.
 */
export class KindmemClient extends Webhooks {
  constructor(token?: string, options: ClientOptions = {}) {
    super(token, options);
  }

  /** A client acting with another credential (say a run token just minted), the same options. */
  withToken(token: string): KindmemClient {
    return new KindmemClient(token, this.sharedOptions());
  }
}
