/**
 * Test hooks of the simulated provider, written into the prompt so the whole cluster's failure
 * paths can be driven through the public API without a real upstream. Only the LAST user message
 * is read (so a hook in an earlier turn of a conversation does not fire again). Each hook is
 * `[[simulate:name=value]]`; several may be given.
 *
 * | hook                               | effect                                                        |
 * |------------------------------------|---------------------------------------------------------------|
 * | `[[simulate:error=503]]`           | fails before the first byte as an upstream HTTP status (any 400-599) |
 * | `[[simulate:error=timeout]]`       | fails before the first byte as an upstream timeout            |
 * | `[[simulate:error=connection]]`    | fails before the first byte as a refused connection           |
 * | `[[simulate:retry_after_ms=2000]]` | the retry-after the failing upstream sends (429 defaults to 1000) |
 * | `[[simulate:fail_after=5]]`        | a stream fails after 5 chunks (a whole response fails too)    |
 * | `[[simulate:ttft_ms=1500]]`        | overrides the model's time to first token                     |
 */
import type { ChatRequestOutput } from '@gateway/proto';
import { messageText } from '@gateway/tokens';

/** The hooks found in a request. */
export interface SimulationDirectives {
  /** An HTTP status, or a failure with no status. */
  error?: number | 'timeout' | 'connection';
  retryAfterMs?: number;
  failAfterChunks?: number;
  timeToFirstTokenMs?: number;
}

const DIRECTIVE = /\[\[simulate:([a-z_]+)=([a-z0-9]+)\]\]/gi;

/** Reads the hooks of the request's last user message; unknown or malformed hooks are ignored. */
export function parseSimulationDirectives(request: ChatRequestOutput): SimulationDirectives {
  const lastUser = [...(request.messages ?? [])].reverse().find((message) => message.role === 'ROLE_USER');
  if (!lastUser) return {};
  const directives: SimulationDirectives = {};
  for (const match of messageText(lastUser).matchAll(DIRECTIVE)) {
    const name = (match[1] as string).toLowerCase();
    const value = (match[2] as string).toLowerCase();
    const number = /^\d+$/.test(value) ? Number(value) : undefined;
    if (name === 'error') {
      if (value === 'timeout' || value === 'connection') directives.error = value;
      else if (number !== undefined && number >= 400 && number <= 599) directives.error = number;
    } else if (name === 'retry_after_ms' && number !== undefined) directives.retryAfterMs = number;
    else if (name === 'fail_after' && number !== undefined) directives.failAfterChunks = number;
    else if (name === 'ttft_ms' && number !== undefined) directives.timeToFirstTokenMs = number;
  }
  return directives;
}
