// The client's own behaviour, against a stub `fetch`: the route each method sends, retries after
// `Retry-After`, timeouts, abort signals, typed errors and the cursor iterators. (The live tests
// hold the same client against kindmem itself.)

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  CODES,
  EmbeddingUnavailable,
  ExtractionQuota,
  FactNotFound,
  ITERATORS,
  KindmemClient,
  KindmemError,
  KindmemTimeoutError,
  NotFound,
  OPERATIONS,
  RateLimited,
  Unavailable,
  UnexpectedResponse,
  ValidationError,
} from 'kindmem-client';

import { json, stubFetch } from './support.js';

const FACT = '00000000-0000-0000-0000-0000000000f1';
const RUN = '00000000-0000-0000-0000-0000000000a1';

// Arguments for each method, for the routing test.
const SAMPLES: Record<string, unknown[]> = {
  me: [],
  capabilities: [],
  mintRun: [{ agent_id: 'a', project_id: FACT }],
  listFacts: [{ type: 't', limit: 5 }],
  createFact: [{ type: 't', content: { text: 'x' } }],
  searchFacts: [{ query: 'tea' }],
  exportFacts: [{ type: 't' }],
  importFacts: ['---\nid: x\n---\nbody\n'],
  getFact: [FACT],
  deleteFact: [FACT],
  factRevisions: [FACT],
  supersedeFact: [FACT, { content: 'x', expected_version: 1 }],
  patchFact: [FACT, { content: { a: null } }, { expected_version: 1 }],
  verifyFact: [FACT],
  factLinks: [FACT, { hops: 2 }],
  linkFacts: [FACT, { target: RUN, type: 'about' }],
  updateLink: [FACT, RUN, { confidence: null }],
  deleteLink: [FACT, RUN],
  remember: [{ type: 't', text: 'x', tool_call_id: 'c' }],
  listApprovals: [{ status: 'pending' }],
  approve: [FACT],
  reject: [FACT],
  approveAndVerify: [FACT],
  appendMessages: ['conv/1', { messages: [{ role: 'user', text: 'x' }] }],
  listMessages: ['conv/1', { before_sequence: 3, limit: 2 }],
  deleteMessage: ['conv/1', 3],
  clearMessages: ['conv/1'],
  extract: ['conv/1'],
  extractions: ['conv/1'],
  recall: [{ selections: [{ agent_id: 'a' }], mode: 'list' }],
  readLog: [RUN],
  appendLog: [RUN, { kind: 'note', payload: {} }],
  verifyLog: [RUN],
  startErasure: [{ target_kind: 'participant', target_id: 'p', reason: 'r' }],
  getErasure: [RUN],
  requestAccessExport: [{ subject_kind: 'participant', subject_id: 'p' }],
  getAccessRequest: [RUN],
  downloadAccessExport: [RUN, { token: 't' }],
  listAudit: [{ since_seq: 3 }],
  listWebhooks: [],
  createWebhook: [{ url: 'https://example.com/hook', events: ['fact.changed'] }],
  deleteWebhook: [RUN],
};

function client(fetch: typeof globalThis.fetch, sleeps: number[] = []) {
  return new KindmemClient('kmk_x', {
    baseUrl: 'http://kindmem.test/',
    fetch,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
}

describe('routes', () => {
  test('each method sends the route its table names, with the credential', async () => {
    // given a stub server that records what it is sent
    const { fetch, sent } = stubFetch(() => json(200, {}));
    const kindmem = client(fetch);
    assert.deepEqual(Object.keys(SAMPLES).sort(), [...new Set(Object.values(OPERATIONS))].sort());
    for (const [route, name] of Object.entries(OPERATIONS)) {
      // when the method is called
      const method = kindmem[name] as (...args: unknown[]) => Promise<unknown>;
      await method.apply(kindmem, SAMPLES[name] ?? []);
      const request = sent.pop();
      assert.ok(request, name);
      // then it sent that method to a path of that template, with the credential
      const [verb, template] = route.split(' ') as [string, string];
      const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
      assert.equal(request.method, verb, name);
      assert.match(request.url.pathname, pattern, name);
      assert.equal(request.headers.get('Authorization'), 'Bearer kmk_x', name);
    }
    // and every paged list has an iterator, an async generator
    for (const [list, iterator] of Object.entries(ITERATORS)) {
      assert.equal(typeof kindmem[list as keyof KindmemClient], 'function', list);
      assert.equal(kindmem[iterator]?.constructor.name, 'AsyncGeneratorFunction', iterator);
    }
  });

  test('an id is one path segment, whatever it holds', async () => {
    const { fetch, sent } = stubFetch(() => json(201, {}));
    await client(fetch).appendMessages('conv/1 ?#', { messages: [{ role: 'user', text: 'x' }] });
    assert.equal(sent[0]?.url.pathname, '/v1/conversations/conv%2F1%20%3F%23/messages');
  });

  test('query parameters are sent as given, what is left out is not sent', async () => {
    const { fetch, sent } = stubFetch(() => json(200, { facts: [], next_cursor: null }));
    await client(fetch).listFacts({ type: 'preference', limit: 5, tag: undefined });
    assert.equal(sent[0]?.url.search, '?type=preference&limit=5');
  });

  test('a body is JSON; a merge patch is sent as application/merge-patch+json', async () => {
    const { fetch, sent } = stubFetch(() => json(200, {}));
    const kindmem = client(fetch);
    await kindmem.remember({ type: 'note', text: 'x', tool_call_id: 'c-1' });
    await kindmem.patchFact(
      FACT,
      { content: { city: 'Lisbon', title: null } },
      { expected_version: 1 },
    );
    assert.equal(sent[0]?.headers.get('Content-Type'), 'application/json');
    assert.deepEqual(JSON.parse(sent[0]?.body ?? ''), {
      type: 'note',
      text: 'x',
      tool_call_id: 'c-1',
    });
    assert.equal(sent[1]?.headers.get('Content-Type'), 'application/merge-patch+json');
    assert.equal(sent[1]?.url.search, '?expected_version=1');
    assert.deepEqual(JSON.parse(sent[1]?.body ?? ''), { content: { city: 'Lisbon', title: null } });
  });

  test('an export downloads as the bytes it is, JSON or zip; every other answer is JSON', async () => {
    const zip = new Uint8Array([0x50, 0x4b, 3, 4]);
    const { fetch, sent } = stubFetch(() => new Response(zip, { status: 200 }));
    const bytes = await client(fetch).downloadAccessExport(RUN, { token: 't', export: 'zip' });
    assert.deepEqual([...bytes], [...zip]);
    assert.equal(sent[0]?.headers.get('Accept'), '*/*');
    assert.equal(sent[0]?.url.search, '?token=t&export=zip');
    await client(fetch)
      .me()
      .catch(() => undefined);
    assert.equal(sent[1]?.headers.get('Accept'), 'application/json');
  });

  test('KINDMEM_URL and KINDMEM_TOKEN stand in for what is not given; withToken keeps the rest', async () => {
    const { fetch, sent } = stubFetch(() => json(200, {}));
    process.env.KINDMEM_URL = 'http://from-env.test';
    process.env.KINDMEM_TOKEN = 'kmk_env';
    try {
      const kindmem = new KindmemClient(undefined, { fetch });
      await kindmem.me();
      await kindmem.withToken('kmr_run').me();
    } finally {
      delete process.env.KINDMEM_URL;
      delete process.env.KINDMEM_TOKEN;
    }
    assert.equal(sent[0]?.url.origin, 'http://from-env.test');
    assert.equal(sent[0]?.headers.get('Authorization'), 'Bearer kmk_env');
    assert.equal(sent[1]?.url.origin, 'http://from-env.test');
    assert.equal(sent[1]?.headers.get('Authorization'), 'Bearer kmr_run');
  });
});

describe('errors', () => {
  test('each code of the vocabulary throws its class, with code, message, details and status', async () => {
    for (const [code, cls] of CODES) {
      const { fetch } = stubFetch(() =>
        json(418, { code, message: `no: ${code}`, details: { f: 1 } }),
      );
      const error = await client(fetch, [])
        .me()
        .then(
          () => assert.fail('no error thrown'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof cls, code);
      assert.ok(error instanceof KindmemError, code);
      assert.equal(error.code, code);
      assert.equal(error.message, `no: ${code}`);
      assert.deepEqual(error.details, { f: 1 });
      assert.equal(error.status, 418);
    }
  });

  test('fact-not-found is a NotFound too; a code the client does not know is a KindmemError', async () => {
    const { fetch } = stubFetch((_, n) =>
      n === 0
        ? json(404, { code: 'fact-not-found', message: 'No such fact', details: null })
        : json(400, { code: 'brand-new-code', message: 'Newer server', details: null }),
    );
    const kindmem = client(fetch);
    const missing = await kindmem.getFact(FACT).catch((e: unknown) => e);
    assert.ok(missing instanceof FactNotFound && missing instanceof NotFound);
    const unknown = await kindmem.me().catch((e: unknown) => e);
    assert.ok(unknown instanceof KindmemError && !(unknown instanceof ValidationError));
    assert.equal(unknown.code, 'brand-new-code');
  });

  test('an answer outside the error shape is an UnexpectedResponse', async () => {
    const { fetch } = stubFetch(() => new Response('<html>Bad gateway</html>', { status: 502 }));
    const error = await client(fetch)
      .me()
      .catch((e: unknown) => e);
    assert.ok(error instanceof UnexpectedResponse);
    assert.equal(error.status, 502);
    assert.match(error.message, /Bad gateway/);
  });
});

describe('retries', () => {
  test('a 429 is retried after its Retry-After, then answers', async () => {
    const sleeps: number[] = [];
    const { fetch, sent } = stubFetch((_, n) =>
      n < 2
        ? json(
            429,
            { code: 'rate-limited', message: 'slow down', details: null },
            { 'Retry-After': '2' },
          )
        : json(201, { outcome: 'created' }),
    );
    const answer = await client(fetch, sleeps).remember({
      type: 'note',
      text: 'x',
      tool_call_id: 'c',
    });
    assert.deepEqual(answer, { outcome: 'created' });
    assert.equal(sent.length, 3);
    assert.deepEqual(sleeps, [2000, 2000]);
  });

  test('a 503 unavailable is retried (backing off without Retry-After); embedding-unavailable is not', async () => {
    const sleeps: number[] = [];
    const { fetch, sent } = stubFetch((_, n) =>
      n === 0
        ? json(503, { code: 'unavailable', message: 'busy', details: null })
        : json(503, { code: 'embedding-unavailable', message: 'no embedder', details: null }),
    );
    const error = await client(fetch, sleeps)
      .searchFacts({ query: 'x', mode: 'semantic' })
      .catch((e: unknown) => e);
    assert.ok(error instanceof EmbeddingUnavailable);
    assert.equal(sent.length, 2);
    assert.deepEqual(sleeps, [1000]);
  });

  test("a proxy's 429 is retried too; an extraction-quota 429 never is (its wait is a day)", async () => {
    const sleeps: number[] = [];
    const { fetch, sent } = stubFetch((_, n) =>
      n === 0
        ? new Response('Too Many Requests', { status: 429, headers: { 'Retry-After': '1' } })
        : json(
            429,
            { code: 'extraction-quota', message: 'spent', details: null },
            { 'Retry-After': '3600' },
          ),
    );
    const error = await client(fetch, sleeps)
      .extract('conv-1')
      .catch((e: unknown) => e);
    assert.ok(error instanceof ExtractionQuota);
    assert.equal(error.retryAfterMs, 3_600_000);
    assert.equal(sent.length, 2);
    assert.deepEqual(sleeps, [1000]);
  });

  test('retries are bounded: the last RateLimited is thrown, with its Retry-After', async () => {
    const sleeps: number[] = [];
    const { fetch, sent } = stubFetch(() =>
      json(
        429,
        { code: 'rate-limited', message: 'slow down', details: null },
        { 'Retry-After': '1' },
      ),
    );
    const kindmem = new KindmemClient('kmk_x', {
      baseUrl: 'http://kindmem.test',
      fetch,
      retry: { maxRetries: 2 },
      sleep: async (ms) => void sleeps.push(ms),
    });
    const error = await kindmem.me().catch((e: unknown) => e);
    assert.ok(error instanceof RateLimited);
    assert.equal(error.retryAfterMs, 1000);
    assert.equal(sent.length, 3);
    assert.deepEqual(sleeps, [1000, 1000]);
  });

  test('a wait longer than maxWaitMs is not waited for; an HTTP-date Retry-After counts from Date', async () => {
    const sleeps: number[] = [];
    const date = 'Wed, 02 Dec 2026 10:00:00 GMT';
    const { fetch, sent } = stubFetch(() =>
      json(
        503,
        { code: 'unavailable', message: 'busy', details: null },
        {
          'Retry-After': 'Wed, 02 Dec 2026 10:05:00 GMT',
          Date: date,
        },
      ),
    );
    const error = await client(fetch, sleeps)
      .me()
      .catch((e: unknown) => e);
    assert.ok(error instanceof Unavailable);
    assert.equal(error.retryAfterMs, 300_000);
    assert.equal(sent.length, 1);
    assert.deepEqual(sleeps, []);
  });
});

describe('timeouts and abort signals', () => {
  // a server that never answers: only the request's signal ends the wait (the timer stands in
  // for the open socket that keeps a real request's process alive; a timeout's own timer does not)
  const hanging = (async (_input: string | URL | Request, init?: RequestInit) =>
    new Promise<Response>((_, reject) => {
      const socket = setTimeout(() => reject(new Error('never aborted')), 60_000);
      init?.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(socket);
          reject(init.signal?.reason);
        },
        { once: true },
      );
    })) as typeof globalThis.fetch;

  test('an attempt that outlasts timeoutMs throws KindmemTimeoutError', async () => {
    const kindmem = new KindmemClient('kmk_x', {
      baseUrl: 'http://kindmem.test',
      fetch: hanging,
      timeoutMs: 50,
    });
    const started = Date.now();
    const error = await kindmem.me().catch((e: unknown) => e);
    assert.ok(error instanceof KindmemTimeoutError);
    assert.equal(error.timeoutMs, 50);
    assert.ok(Date.now() - started < 5000);
    // and a call may ask for its own
    const own = await kindmem.me({ timeoutMs: 20 }).catch((e: unknown) => e);
    assert.ok(own instanceof KindmemTimeoutError && own.timeoutMs === 20);
  });

  test("the caller's AbortSignal aborts a request in flight, with the signal's reason", async () => {
    const kindmem = new KindmemClient('kmk_x', { baseUrl: 'http://kindmem.test', fetch: hanging });
    const controller = new AbortController();
    const pending = kindmem.me({ signal: controller.signal });
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    assert.ok(error instanceof DOMException && error.name === 'AbortError');
  });

  test("a client's signal aborts a retry's wait", async () => {
    const controller = new AbortController();
    const { fetch, sent } = stubFetch(() =>
      json(
        429,
        { code: 'rate-limited', message: 'slow down', details: null },
        { 'Retry-After': '30' },
      ),
    );
    const kindmem = new KindmemClient('kmk_x', {
      baseUrl: 'http://kindmem.test',
      fetch,
      signal: controller.signal,
    });
    const pending = kindmem.me();
    setTimeout(() => controller.abort(new Error('shutting down')), 20);
    const error = await pending.catch((e: unknown) => e);
    assert.ok(error instanceof Error && error.message === 'shutting down');
    assert.equal(sent.length, 1);
  });
});

describe('iterators', () => {
  test('iterFacts follows next_cursor to the last page', async () => {
    const pages = [
      { facts: [{ id: 'a' }, { id: 'b' }], next_cursor: 'c2' },
      { facts: [{ id: 'c' }], next_cursor: null },
    ];
    const { fetch, sent } = stubFetch((_, n) => json(200, pages[n]));
    const ids: string[] = [];
    for await (const fact of client(fetch).iterFacts({ type: 'note', limit: 2 })) ids.push(fact.id);
    assert.deepEqual(ids, ['a', 'b', 'c']);
    assert.equal(sent[0]?.url.search, '?type=note&limit=2');
    assert.equal(sent[1]?.url.search, '?type=note&limit=2&cursor=c2');
  });

  test('iterLog follows next_after_sequence; iterAudit stops at a short page', async () => {
    const log = [
      { entries: [{ sequence: 1 }, { sequence: 2 }], next_after_sequence: 2 },
      { entries: [{ sequence: 3 }], next_after_sequence: null },
    ];
    const { fetch: logFetch, sent: logSent } = stubFetch((_, n) => json(200, log[n]));
    const sequences: number[] = [];
    for await (const entry of client(logFetch).iterLog(RUN, { limit: 2 }))
      sequences.push(entry.sequence);
    assert.deepEqual(sequences, [1, 2, 3]);
    assert.equal(logSent[1]?.url.searchParams.get('after_sequence'), '2');

    const audit = [
      { events: [{ seq: 4 }, { seq: 5 }], next_since_seq: 5 },
      { events: [{ seq: 6 }], next_since_seq: 6 },
    ];
    const { fetch: auditFetch, sent: auditSent } = stubFetch((_, n) => json(200, audit[n]));
    const seqs: number[] = [];
    for await (const event of client(auditFetch).iterAudit({ since_seq: 3, limit: 2 }))
      seqs.push(event.seq);
    assert.deepEqual(seqs, [4, 5, 6]);
    assert.deepEqual(
      auditSent.map((s) => s.url.searchParams.get('since_seq')),
      ['3', '5'],
    );
  });
});

describe('the package', () => {
  test('the client and the bindings import nothing but each other: no runtime dependency', async () => {
    const { readFileSync } = await import('node:fs');
    const { createRequire } = await import('node:module');
    const { dirname, join } = await import('node:path');
    const require = createRequire(import.meta.url);
    const manifest = require('kindmem-client/package.json') as { dependencies?: object };
    assert.equal(manifest.dependencies, undefined);
    // every module reachable from the two entry points, and what each imports
    const root = dirname(require.resolve('kindmem-client/package.json'));
    const seen = new Set<string>();
    const outside = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(
        /^\s*(?:import|export)\s+(?:[\w$*{}\s,]+\s+from\s+)?['"]([^'"]+)['"]/gm,
      )) {
        if (spec?.startsWith('.')) walk(join(dirname(file), spec));
        else if (spec) outside.add(spec);
      }
    };
    walk(join(root, 'dist', 'index.js'));
    walk(join(root, 'dist', 'memory', 'index.js'));
    assert.ok(seen.size > 10);
    assert.deepEqual([...outside], []);
    // and only the AI SDK subpath needs `ai` and `zod`
    walk(join(root, 'dist', 'ai.js'));
    assert.deepEqual([...outside].sort(), ['ai', 'zod']);
  });
});
