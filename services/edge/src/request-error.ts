/**
 * A request the edge refuses, with everything its OpenAI error body needs. Thrown anywhere in the
 * edge and turned into a response in one place (errors.ts).
 */
export class RequestError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, message: string, options: { type?: string; code?: string | null; param?: string | null; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = 'RequestError';
    this.status = status;
    this.type = options.type ?? typeForStatus(status);
    this.code = options.code ?? null;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }
}

/** The OpenAI error `type` of each status; one table for the whole edge. */
export function typeForStatus(status: number): string {
  switch (status) {
    case 400:
    case 404:
    case 405:
    case 409:
    case 413:
    case 415:
    case 422:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 429:
      return 'rate_limit_error';
    case 502:
      return 'upstream_error';
    case 503:
      return 'service_unavailable_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'server_error' : 'invalid_request_error';
  }
}

/** A 400 about one field of the body. */
export function invalid(param: string | null, message: string, code = 'invalid_value'): RequestError {
  return new RequestError(400, message, { param, code });
}
