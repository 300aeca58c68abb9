/**
 * `KubeApiError`: a failed Kubernetes API request, parsed from the `Status` body the API
 * server returns and the `Retry-After` header.
 *
 * The runtime decides on it: 404 → the object is gone (done), 409 → a prompt retry with
 * fresh state, 429 / 5xx with `Retry-After` → requeue after that long (at most
 * `MAX_RETRY_AFTER_SECONDS`: a server, proxy or load balancer cannot park an object for
 * hours or for ever), anything else → the usual backoff. The message always names the request and what the server said, so a log
 * line or an Event is enough to understand the failure.
 */

export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  /** HTTP status code (0 when the request never got a response). */
  readonly status: number;
  /** `Status.reason` (`NotFound`, `Conflict`, `Forbidden`, `TooManyRequests`, ...). */
  readonly reason: string;
  /** Seconds from `Retry-After` (header or `Status.details.retryAfterSeconds`), if any; parsed values are whole seconds in [1, MAX_RETRY_AFTER_SECONDS]. */
  readonly retryAfterSeconds: number | undefined;
  /** `METHOD path` of the failed request. */
  readonly request: string;

  constructor(init: { status: number; reason: string; message: string; request: string; retryAfterSeconds?: number | undefined; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.reason = init.reason;
    this.request = init.request;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

export function isKubeApiError(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError || (err instanceof Error && err.name === 'KubeApiError' && typeof (err as { status?: unknown }).status === 'number');
}

export const isNotFound = (err: unknown): boolean => isKubeApiError(err) && err.status === 404;
export const isConflict = (err: unknown): boolean => isKubeApiError(err) && err.status === 409;

/**
 * The longest `Retry-After` honoured, in seconds. API Priority and Fairness asks for 1–16 s;
 * a larger value (a misconfigured proxy, an HTTP date far ahead) is capped to this, so a
 * throttled object is tried again within 5 minutes and no wait needs more than one SQS delay.
 */
export const MAX_RETRY_AFTER_SECONDS = 300;

/** A Retry-After in seconds as honoured: whole seconds, at most MAX_RETRY_AFTER_SECONDS; undefined when not a positive number. */
export function boundedRetryAfter(seconds: number | undefined): number | undefined {
  if (seconds === undefined || Number.isNaN(seconds) || seconds <= 0) return undefined;
  return Math.min(Math.ceil(seconds), MAX_RETRY_AFTER_SECONDS);
}

const REASON_BY_STATUS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const HINT_BY_STATUS: Record<number, string> = {
  401: 'check the credentials of the kubeconfig / EKS access entry used by this function',
  403: "grant this verb on this resource to the function's Kubernetes identity (RBAC)",
  404: 'check that the CRD is installed and apiVersion/plural are right',
};

/** Parses a failed response. `body` is the raw response text (a `Status` object, usually). */
export function parseKubeError(request: string, status: number, body: string, retryAfterHeader: string | null): KubeApiError {
  let reason = REASON_BY_STATUS[status] ?? (status >= 500 ? 'InternalError' : 'Unknown');
  let message = '';
  let retryAfterSeconds = parseRetryAfter(retryAfterHeader);
  try {
    const parsed = JSON.parse(body) as { kind?: unknown; reason?: unknown; message?: unknown; details?: { retryAfterSeconds?: unknown } };
    if (parsed && typeof parsed === 'object') {
      if (typeof parsed.reason === 'string' && parsed.reason) reason = parsed.reason;
      if (typeof parsed.message === 'string') message = parsed.message;
      const fromDetails = parsed.details?.retryAfterSeconds;
      if (retryAfterSeconds === undefined && typeof fromDetails === 'number') retryAfterSeconds = boundedRetryAfter(fromDetails);
    }
  } catch {
    message = body.trim().slice(0, 300);
  }
  const hint = HINT_BY_STATUS[status];
  const text = `${request} failed: ${status} ${reason}${message ? `: ${message}` : ''}${hint ? ` (${hint})` : ''}`;
  return new KubeApiError({ status, reason, message: text, request, retryAfterSeconds });
}

/** `Retry-After` as seconds: either delta-seconds or an HTTP date; capped at MAX_RETRY_AFTER_SECONDS. */
export function parseRetryAfter(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return boundedRetryAfter(Number(trimmed));
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return boundedRetryAfter((date - now) / 1000);
}
