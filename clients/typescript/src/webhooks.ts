// The tenant's webhook endpoints (tenant admins), and checking that a delivery came from kindmem.

import type { RequestOptions } from './core.js';
import { Audit } from './audit.js';
import { segment } from './core.js';
import type { Schemas } from './types.js';

export type WebhookEndpoint = Schemas['WebhookEndpointOutput'];
export type WebhookEndpointCreated = Schemas['WebhookEndpointCreatedOutput'];
export type WebhookEndpointList = Schemas['WebhookEndpointListOutput'];
export type WebhookEndpointCreate = Schemas['WebhookEndpointCreateInputRequest'];

/** `/v1/webhooks`. */
export class Webhooks extends Audit {
  /** The tenant's webhook endpoints, oldest first (their secrets are not shown again). */
  listWebhooks(options?: RequestOptions): Promise<WebhookEndpointList> {
    return this.json('GET', '/v1/webhooks', {}, options);
  }

  /** Register an endpoint; the answer's `secret` is shown this once (check each delivery with `verifyWebhook`). */
  createWebhook(
    body: WebhookEndpointCreate,
    options?: RequestOptions,
  ): Promise<WebhookEndpointCreated> {
    return this.json('POST', '/v1/webhooks', { json: body }, options);
  }

  /** Delete an endpoint: nothing more is sent to it. */
  async deleteWebhook(endpointId: string, options?: RequestOptions): Promise<void> {
    await this.request('DELETE', `/v1/webhooks/${segment(endpointId)}`, {}, options);
  }
}

/** A delivery that kindmem did not sign with this secret, or one too old. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/** How far a delivery's timestamp may be from the receiver's clock, in seconds. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function bytesBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** Equal strings, compared in time that does not depend on where they differ. */
function sameText(a: string, b: string): boolean {
  let differs = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++)
    differs |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differs === 0;
}

/**
 * The delivery's payload (`{ type, timestamp, data }`) when its Standard Webhooks headers
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`) sign `body` (the bytes exactly as
 * received) under `secret` ("whsec_..."), within the tolerance of now; else rejects with
 * `WebhookVerificationError`. Deduplicate on `webhook-id`: a delivery can arrive twice. Web
 * Crypto only (Node 20+, browsers, edge runtimes): the package imports nothing.
 */
export async function verifyWebhook(
  body: string | Uint8Array,
  headers: Record<string, string | undefined> | Headers,
  secret: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): Promise<{ type: string; timestamp: string; data: Record<string, unknown> }> {
  const get = (name: string): string | undefined =>
    headers instanceof Headers
      ? (headers.get(name) ?? undefined)
      : Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  const id = get('webhook-id');
  const stamp = get('webhook-timestamp');
  const signatures = get('webhook-signature');
  if (!id || !stamp || !signatures) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or signature.');
  }
  const sentAt = Number(stamp);
  if (!Number.isInteger(sentAt))
    throw new WebhookVerificationError('The timestamp is not a number.');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - sentAt) > (options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError('The timestamp is too far from now.');
  }
  const raw = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const prefix = new TextEncoder().encode(`${id}.${sentAt}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const key = await crypto.subtle.importKey(
    'raw',
    base64Bytes(secret.replace(/^whsec_/, '')),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const expected = bytesBase64(new Uint8Array(await crypto.subtle.sign('HMAC', key, signed)));
  for (const versioned of signatures.split(' ')) {
    const [version, given] = versioned.split(',', 2);
    if (version === 'v1' && sameText(given ?? '', expected)) {
      return JSON.parse(new TextDecoder().decode(raw));
    }
  }
  throw new WebhookVerificationError('No signature matches.');
}
