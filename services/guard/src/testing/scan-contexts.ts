/**
 * The ScanContext of a test's scan: a request of a test key at a point, with the signal the test
 * gives (a deadline, or none).
 */
import type { ScanContext } from '../checks/scanner.js';

/** A context at `point` whose signal is `signal` (never aborted by default). */
export function scanContext(options: { signal?: AbortSignal; point?: string } = {}): ScanContext {
  return {
    signal: options.signal ?? new AbortController().signal,
    requestId: 'req_test',
    keyId: 'key_test',
    teamId: 'team_test',
    model: 'gpt-4o-mini',
    point: options.point ?? 'input',
  };
}
