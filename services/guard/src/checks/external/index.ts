/** Stand-in until the outside services' adapters land. */
import type { Scanner } from '../scanner.js';

export interface ExternalSpec {
  service: string;
  baseUrl: string;
  credential: string;
  settings: Record<string, string>;
  deadlineMs: number;
}

export class ExternalCheckError extends Error {
  constructor(
    readonly reason: 'deadline_exceeded' | 'unavailable' | 'upstream_error',
    message: string,
  ) {
    super(message);
  }
}

export function validateExternalSpec(spec: ExternalSpec): string | undefined {
  return spec.service ? undefined : 'service is required.';
}

export function createExternalScanner(_spec: ExternalSpec): Scanner {
  return { scan: () => Promise.reject(new ExternalCheckError('unavailable', 'No adapter.')) };
}
