// kindmem's errors as exceptions: one class per code of the API's error vocabulary.
//
// Every error kindmem answers has one shape, `{"code", "message", "details"}`; the client throws
// the class registered for its `code` (`FactNotFound` for `fact-not-found`, ...), each a
// subclass of `KindmemError`, so `instanceof KindmemError` catches them all and
// `instanceof NotFound` catches `not-found` and `fact-not-found` alike. A code this client does
// not know (a newer server) throws `KindmemError` itself, with that code; an answer that is not
// in the error shape (a proxy's HTML page) throws `UnexpectedResponse`.

/** The error shape of every kindmem error answer. */
export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly details: unknown;
}

/** An error answer from kindmem: its `code`, `message`, `details` and HTTP `status`. */
export class KindmemError extends Error {
  static readonly code: string = '';
  readonly code: string;
  readonly details: unknown;
  readonly status: number;
  readonly headers: Headers;

  constructor(
    message: string,
    init: { code?: string; details?: unknown; status: number; headers?: Headers },
  ) {
    super(message);
    this.name = new.target.name;
    this.code = init.code ?? (new.target as typeof KindmemError).code;
    this.details = init.details ?? null;
    this.status = init.status;
    this.headers = init.headers ?? new Headers();
  }

  /** The error shape, as the server sent it. */
  toJSON(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** 401: no credential, or a bad, revoked or expired one. */
export class Unauthenticated extends KindmemError {
  static override readonly code = 'unauthenticated';
}
/** 403: this credential may not do that. */
export class Forbidden extends KindmemError {
  static override readonly code = 'forbidden';
}
/** 404: no such resource, or not one this credential may read. */
export class NotFound extends KindmemError {
  static override readonly code: string = 'not-found';
}
/** 404: no such fact, or not one this credential may read (the two look the same). */
export class FactNotFound extends NotFound {
  static override readonly code = 'fact-not-found';
}
/** 400: the request is not valid; `details` says which fields and why. */
export class ValidationError extends KindmemError {
  static override readonly code = 'validation-error';
}
/** 400: the fact is not valid (an undeclared type, an empty or too long text, a schema's path). */
export class InvalidFact extends KindmemError {
  static override readonly code = 'invalid-fact';
}
export class MethodNotAllowed extends KindmemError {
  static override readonly code = 'method-not-allowed';
}
export class NotAcceptable extends KindmemError {
  static override readonly code = 'not-acceptable';
}
export class UnsupportedMediaType extends KindmemError {
  static override readonly code = 'unsupported-media-type';
}
/** 409: someone else changed it first (`expected_version`, a decision taken twice). */
export class Conflict extends KindmemError {
  static override readonly code = 'conflict';
}
/**
 * 409: the memory waiting for review was computed from a version of its fact that is no longer
 * current (edited, deleted, erased since); approving it would undo that, so nothing changed.
 * `details`: `base_version`, `current_version`, `change`. Reject it instead.
 */
export class StaleApproval extends KindmemError {
  static override readonly code = 'stale-approval';
}
/** 409: retention forbids the change (legal hold, keep_until, keep_days). */
export class RetentionViolation extends KindmemError {
  static override readonly code = 'retention-violation';
}
/** 409: an erasure for this person runs; nothing new lands until it ends. */
export class ErasureInProgress extends KindmemError {
  static override readonly code = 'erasure-in-progress';
}
/** 409: the run wrote as many memories as one run may; a new run may write more. */
export class MemoryLimitReached extends KindmemError {
  static override readonly code = 'memory-limit-reached';
}
/** 410: the export's download link has expired; ask for the request again. */
export class LinkExpired extends KindmemError {
  static override readonly code = 'link-expired';
}
export class RequestTooLarge extends KindmemError {
  static override readonly code = 'request-too-large';
}
export class UriTooLong extends KindmemError {
  static override readonly code = 'uri-too-long';
}
export class HeadersTooLarge extends KindmemError {
  static override readonly code = 'headers-too-large';
}
/**
 * 429: too many requests for this credential. Thrown once the client's bounded retries are spent
 * (or the server asks for a longer wait than the client's `maxWaitMs`).
 */
export class RateLimited extends KindmemError {
  static override readonly code = 'rate-limited';
  /** The server's `Retry-After`, in milliseconds; undefined if it sent none. */
  get retryAfterMs(): number | undefined {
    return retryAfterMs(this.headers);
  }
}
/**
 * 429: the tenant's extraction tokens for the day, or the conversation's, are spent. Never
 * retried: its wait is the next day (its `Retry-After`), or forever (a conversation's, none).
 */
export class ExtractionQuota extends KindmemError {
  static override readonly code = 'extraction-quota';
  get retryAfterMs(): number | undefined {
    return retryAfterMs(this.headers);
  }
}
/** 503: semantic search needs an embedder, and none is configured or answering. Not retried. */
export class EmbeddingUnavailable extends KindmemError {
  static override readonly code = 'embedding-unavailable';
}
/** 503: extraction needs the operator's chat model, and none is configured or answering. */
export class ExtractionUnavailable extends KindmemError {
  static override readonly code = 'extraction-unavailable';
}
/** 503: the server's database is saturated or out of reach. Thrown once the retries are spent. */
export class Unavailable extends KindmemError {
  static override readonly code = 'unavailable';
  get retryAfterMs(): number | undefined {
    return retryAfterMs(this.headers);
  }
}
/** 500: the server could not complete the request. */
export class PersistenceError extends KindmemError {
  static override readonly code = 'persistence-error';
}
/** 501: a method the server does not implement (gunicorn's refusal, in the error shape). */
export class NotImplementedByServer extends KindmemError {
  static override readonly code = 'not-implemented';
}
/** An error answer that is not in kindmem's error shape (a proxy, a load balancer). */
export class UnexpectedResponse extends KindmemError {
  static override readonly code = 'unexpected-response';
}

/** Not an answer: an attempt took longer than its `timeoutMs`. */
export class KindmemTimeoutError extends Error {
  constructor(
    message: string,
    readonly timeoutMs: number,
  ) {
    super(message);
    this.name = 'KindmemTimeoutError';
  }
}

const CLASSES = [
  Unauthenticated,
  Forbidden,
  NotFound,
  FactNotFound,
  ValidationError,
  InvalidFact,
  MethodNotAllowed,
  NotAcceptable,
  UnsupportedMediaType,
  Conflict,
  StaleApproval,
  RetentionViolation,
  ErasureInProgress,
  MemoryLimitReached,
  LinkExpired,
  RequestTooLarge,
  UriTooLong,
  HeadersTooLarge,
  RateLimited,
  ExtractionQuota,
  EmbeddingUnavailable,
  ExtractionUnavailable,
  Unavailable,
  PersistenceError,
  NotImplementedByServer,
] as const;

/** code -> class, for every code of the vocabulary (docs/api.md's error list, api/errors.py). */
export const CODES: ReadonlyMap<string, typeof KindmemError> = new Map(
  CLASSES.map((cls) => [cls.code, cls]),
);

/** `Retry-After` in milliseconds: seconds or an HTTP date; undefined if absent or bad. */
export function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('Retry-After');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  const sent = Date.parse(headers.get('Date') ?? '');
  return Math.max(0, at - (Number.isNaN(sent) ? Date.now() : sent));
}

function isErrorBody(value: unknown): value is ErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}

/** The exception for an error answer (status >= 400). */
export function errorFromAnswer(status: number, headers: Headers, bytes: Uint8Array): KindmemError {
  const text = new TextDecoder().decode(bytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!isErrorBody(body)) {
    return new UnexpectedResponse(`HTTP ${status}: ${text.slice(0, 200)}`, { status, headers });
  }
  const message = typeof body.message === 'string' && body.message ? body.message : body.code;
  const cls = CODES.get(body.code);
  const init = { details: body.details, status, headers };
  return cls === undefined
    ? new KindmemError(message, { ...init, code: body.code })
    : new cls(message, init);
}
