/**
 * The one failure of an outside check: the service could not decide. Its reason is the
 * GuardDecision.error the runner reports and on_error acts on; its message names the service and
 * what went wrong in general terms (a status, an error code, a socket error's code), never the
 * credential, a token or any of the texts, so it may go to a log or an answer as it is.
 */

/** Why an outside check could not decide (GuardDecision.error). */
export type ExternalFailureReason = 'deadline_exceeded' | 'unavailable' | 'upstream_error';

/** Thrown by an outside scanner that got no usable answer. */
export class ExternalCheckError extends Error {
  constructor(
    /** `deadline_exceeded`: the context's signal (or the check's deadline) ended the call; `unavailable`: the service could not be reached or said it is overloaded (429, 502, 503, 504); `upstream_error`: it refused the call or answered what cannot be read. */
    readonly reason: ExternalFailureReason,
    /** The service (`openai_moderation`, ...). */
    readonly service: string,
    message: string,
  ) {
    super(`${service}: ${message}`);
    this.name = 'ExternalCheckError';
  }
}

/** The statuses that say the service is there but cannot answer now: unavailable rather than an upstream error. */
const UNAVAILABLE_STATUSES = new Set([429, 502, 503, 504]);

/** The reason of an answer with a non-2xx `status`. */
export function reasonOfStatus(status: number): ExternalFailureReason {
  return UNAVAILABLE_STATUSES.has(status) ? 'unavailable' : 'upstream_error';
}

/** An error code a service sent or a socket error carried, when it is a short identifier (nothing else is repeated). */
export function safeCode(code: unknown): string | undefined {
  return typeof code === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(code)
    ? code
    : typeof code === 'number' && Number.isInteger(code)
      ? String(code)
      : undefined;
}

/** `message` with every secret in it replaced: the last guard before a message leaves an adapter. */
export function withoutSecrets(message: string, secrets: readonly string[]): string {
  let clean = message;
  for (const secret of secrets) if (secret.length > 0) clean = clean.split(secret).join('[redacted]');
  return clean;
}
