// verifyWebhook against a delivery signed as kindmem signs (Standard Webhooks: HMAC-SHA256 of
// "id.timestamp.body", base64, "v1,"), and refusing a tampered, re-addressed or stale one.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';

import { verifyWebhook, WebhookVerificationError } from 'kindmem-client';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function signed(body: string, id: string, at: number): Record<string, string> {
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${at}.${body}`).digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(at),
    'webhook-signature': `v1,${signature}`,
  };
}

test('a delivery kindmem signed verifies, and a tampered or stale one does not', async () => {
  const body = JSON.stringify({ type: 'fact.changed', data: { fact_id: 'f-1' } });
  const now = Math.floor(Date.now() / 1000);
  const headers = signed(body, 'msg_1', now);
  assert.deepEqual((await verifyWebhook(body, headers, SECRET)).data, { fact_id: 'f-1' });
  assert.equal((await verifyWebhook(body, new Headers(headers), SECRET)).type, 'fact.changed');
  await assert.rejects(
    () => verifyWebhook(body.replace('f-1', 'f-2'), headers, SECRET),
    WebhookVerificationError,
  );
  await assert.rejects(
    () => verifyWebhook(body, { ...headers, 'webhook-id': 'msg_2' }, SECRET),
    WebhookVerificationError,
  );
  await assert.rejects(
    () => verifyWebhook(body, headers, 'whsec_' + 'A'.repeat(43)),
    WebhookVerificationError,
  );
  await assert.rejects(
    () => verifyWebhook(body, headers, SECRET, { nowSeconds: now + 3600 }),
    WebhookVerificationError,
  );
});
