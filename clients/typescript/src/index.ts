// kindmem-client: kindmem's REST API for TypeScript agents (ESM, Node 20+, `fetch` only).
// The seed's bindings are `kindmem-client/memory`; the Vercel AI SDK tools `kindmem-client/ai`.

export { KindmemClient } from './client.js';
export {
  type ClientOptions,
  DEFAULT_BASE_URL,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  type RequestOptions,
  type RetryPolicy,
} from './core.js';
export * from './errors.js';
export { ITERATORS, OPERATIONS } from './operations.js';
export {
  verifyWebhook,
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookVerificationError,
  type WebhookEndpoint,
  type WebhookEndpointCreate,
  type WebhookEndpointCreated,
  type WebhookEndpointList,
} from './webhooks.js';
export type * from './types.js';
