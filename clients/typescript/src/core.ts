// What every route of `KindmemClient` stands on: its credential, `fetch`, one request with its
// timeout and abort signal, and the retry of a 429 or 503 `unavailable` after `Retry-After`.

import {
  errorFromAnswer,
  KindmemTimeoutError,
  RateLimited,
  retryAfterMs,
  Unavailable,
  UnexpectedResponse,
} from './errors.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8000';
export const DEFAULT_TIMEOUT_MS = 30_000;
export const USER_AGENT = 'kindmem-client-typescript/0.1.0';

/**
 * How a 429 `rate-limited` or a 503 `unavailable` answer is retried: at most `maxRetries` times,
 * each after the server's `Retry-After` (or `backoffMs * 2 ** attempt` when it sends none). A
 * wait longer than `maxWaitMs` is not waited for: the error is thrown at once. Only these two are
 * retried: kindmem answers them only for a request that wrote nothing (the throttle and the
 * concurrency limit refuse before the view runs; a database that could not be had rolls the
 * request back), so a retried write cannot land twice. A 503 `embedding-unavailable` is not
 * retried: waiting does not wire an embedder.
 */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly maxWaitMs: number;
  readonly backoffMs: number;
}

// kindmem's write rates are per minute (KINDMEM_WRITE_RATE), so its Retry-After is <= 61 s.
export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, maxWaitMs: 90_000, backoffMs: 1_000 };

export interface ClientOptions {
  /** The server; default `KINDMEM_URL`, else http://127.0.0.1:8000. */
  readonly baseUrl?: string;
  /** Milliseconds each attempt may take, its answer read included (0: no limit). Default 30 s. */
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
  /** Aborts every request of this client (and of clients `withToken` makes from it). */
  readonly signal?: AbortSignal;
  /** Another `fetch` (a test's stub, a proxy-aware one); default the global `fetch`. */
  readonly fetch?: typeof fetch;
  /** How the retry waits; a test may pass one that does not. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Per call: its own abort signal, and a timeout other than the client's. */
export interface RequestOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export type QueryValue = string | number | boolean | null | undefined;

export interface Call {
  readonly query?: object;
  /** A JSON body (sent as `application/json`, or as `contentType` when given). */
  readonly json?: unknown;
  /** A body sent as it is (memory files: a zip's bytes, or one file's text) as `contentType`. */
  readonly raw?: Uint8Array | string;
  readonly contentType?: string;
  /** The `Accept` header; default `application/json`. */
  readonly accept?: string;
}

/** An answer of status < 400, read whole. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Uint8Array;
}

function env(name: string): string | undefined {
  const value = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env?.[name];
  return value === '' ? undefined : value;
}

/** One path segment: ids are opaque strings (a conversation id may hold a slash). */
export function segment(value: string | number): string {
  return encodeURIComponent(String(value));
}

function queryString(query: object | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {}) as [string, QueryValue][]) {
    if (value === undefined || value === null) continue;
    params.append(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The transport under `KindmemClient`; each group of routes is a subclass (see client.ts). */
export class Core {
  readonly token: string | undefined;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly options: ClientOptions;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  /**
   * `token` is an API key (`kmk_...`) or a run token (`kmr_...`); without one, `KINDMEM_TOKEN`.
   */
  constructor(token?: string, options: ClientOptions = {}) {
    this.token = token ?? env('KINDMEM_TOKEN');
    this.baseUrl = (options.baseUrl ?? env('KINDMEM_URL') ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.options = options;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#sleep = options.sleep ?? sleepFor;
  }

  /**
   * Send one request with this client's credential; retry a 429 or a 503 `unavailable` as
   * `retry` allows; throw the typed error (`KindmemError` and its subclasses) for an error
   * answer, `KindmemTimeoutError` when an attempt outlasts its timeout, and the signal's reason
   * (an `AbortError`) when the caller aborts, waiting for a retry included.
   */
  async request(
    method: string,
    path: string,
    call: Call = {},
    options: RequestOptions = {},
  ): Promise<Answer> {
    const url = `${this.baseUrl}${path}${queryString(call.query)}`;
    const headers: Record<string, string> = {
      Accept: call.accept ?? 'application/json',
      'User-Agent': USER_AGENT,
    };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let body: string | Uint8Array | undefined;
    if (call.raw !== undefined) {
      body = call.raw;
      headers['Content-Type'] = call.contentType ?? 'application/octet-stream';
    } else if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['Content-Type'] = call.contentType ?? 'application/json';
    }
    const callerSignals = [options.signal, this.options.signal].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const answer = await this.#attempt(url, method, headers, body, callerSignals, timeoutMs);
      if (answer.status < 400) return answer;
      const error = errorFromAnswer(answer.status, answer.headers, answer.bytes);
      const wait = this.#retryWait(error, answer.headers, attempt);
      if (wait === undefined) throw error;
      await this.#sleep(
        wait,
        callerSignals.length > 0 ? AbortSignal.any(callerSignals) : undefined,
      );
    }
  }

  async #attempt(
    url: string,
    method: string,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    callerSignals: AbortSignal[],
    timeoutMs: number,
  ): Promise<Answer> {
    const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    const signals = timeout ? [...callerSignals, timeout] : callerSignals;
    const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
    try {
      const response = await this.#fetch(url, { method, headers, body, signal });
      // the body is read under the same signal: a server that stalls mid-answer times out too
      const bytes = new Uint8Array(await response.arrayBuffer());
      return { status: response.status, headers: response.headers, bytes };
    } catch (error) {
      if (timeout?.aborted && !callerSignals.some((s) => s.aborted)) {
        throw new KindmemTimeoutError(
          `${method} ${url} took longer than ${timeoutMs} ms`,
          timeoutMs,
        );
      }
      throw error;
    }
  }

  #retryWait(error: Error, headers: Headers, attempt: number): number | undefined {
    // kindmem's two answers for "a moment's wait", and a proxy's 429 outside its error shape; an
    // `extraction-quota` 429 is not one (the day's or the conversation's tokens are spent)
    const proxied = error instanceof UnexpectedResponse && error.status === 429;
    if (!(error instanceof RateLimited || error instanceof Unavailable || proxied))
      return undefined;
    if (attempt >= this.retry.maxRetries) return undefined;
    const wait = retryAfterMs(headers) ?? this.retry.backoffMs * 2 ** attempt;
    return wait <= this.retry.maxWaitMs ? wait : undefined;
  }

  /** The answer's JSON. */
  async json<T>(
    method: string,
    path: string,
    call: Call = {},
    options: RequestOptions = {},
  ): Promise<T> {
    const answer = await this.request(method, path, call, options);
    return JSON.parse(new TextDecoder().decode(answer.bytes)) as T;
  }

  /** The options a client with another credential shares with this one. */
  protected sharedOptions(): ClientOptions {
    return { ...this.options, baseUrl: this.baseUrl, timeoutMs: this.timeoutMs, retry: this.retry };
  }
}
