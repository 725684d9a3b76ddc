// What the tests share: the live kindmem the harness started (tests/clients/test_typescript_client.py
// passes its address and credentials in the environment), runs minted on it, and a stub `fetch`
// for the tests that check what the client sends.

import { randomUUID } from 'node:crypto';

import { KindmemClient, type RunMint } from 'kindmem-client';

export interface Live {
  /** kindmem with an embedder (the deterministic `hashing` one). */
  readonly url: string;
  /** kindmem without an embedder. */
  readonly bareUrl: string;
  readonly appKey: string;
  readonly adminKey: string;
  readonly project: string;
  readonly agent: string;
  /** Every error code the server can answer (tests/clients/test_python_client_errors.py). */
  readonly serverCodes: readonly string[];
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: the live tests run under the harness, ` +
        '`.venv/bin/pytest tests/clients/test_typescript_client.py` (it starts kindmem and sets it)',
    );
  }
  return value;
}

let cached: Live | undefined;

/** The live kindmem, as the harness describes it; throws (never skips) when there is none. */
export function live(): Live {
  cached ??= {
    url: required('KINDMEM_TEST_URL'),
    bareUrl: required('KINDMEM_TEST_BARE_URL'),
    appKey: required('KINDMEM_TEST_APP_KEY'),
    adminKey: required('KINDMEM_TEST_ADMIN_KEY'),
    project: required('KINDMEM_TEST_PROJECT'),
    agent: required('KINDMEM_TEST_AGENT'),
    serverCodes: JSON.parse(required('KINDMEM_TEST_SERVER_CODES')) as string[],
  };
  return cached;
}

export function appClient(url = live().url): KindmemClient {
  return new KindmemClient(live().appKey, { baseUrl: url });
}

export function adminClient(url = live().url): KindmemClient {
  return new KindmemClient(live().adminKey, { baseUrl: url });
}

/** A fresh end user's id, so that tests sharing the tenant never see each other's memories. */
export function person(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** A run of the test agent for `participant` (in its own thread), and a client acting as it. */
export async function mint(
  participant: string,
  url = live().url,
): Promise<{ run: RunMint['run']; token: string; agent: KindmemClient }> {
  const app = appClient(url);
  const minted = await app.mintRun({
    agent_id: live().agent,
    project_id: live().project,
    participant_id: participant,
    thread_id: `${participant}-thread`,
  });
  return { run: minted.run, token: minted.token, agent: app.withToken(minted.token) };
}

export interface Sent {
  readonly method: string;
  readonly url: URL;
  readonly headers: Headers;
  readonly body: string | undefined;
}

/** A `fetch` that records each request and answers with `answer(request, n)` (n from 0). */
export function stubFetch(answer: (sent: Sent, n: number) => Response | Promise<Response>) {
  const sent: Sent[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request: Sent = {
      method: init?.method ?? 'GET',
      url: new URL(String(input)),
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? init.body : undefined,
    };
    sent.push(request);
    init?.signal?.throwIfAborted();
    return answer(request, sent.length - 1);
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}
