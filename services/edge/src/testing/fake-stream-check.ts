/**
 * A check that behaves as the guard's does on stream windows, for the hold-back's tests and its
 * benchmark: it finds one fixed secret (an AWS access key id), masks or blocks it, and on a window
 * that is not final holds back the tail of each text that could be the secret's start
 * (TextResult.held_chars). startFakeStreamGuard serves it as a real GuardService.
 */
import { createGatewayServer, type GatewayService, unary } from '@gateway/grpc';
import { type CheckRequestOutput, type CheckResponseOutput, type GuardDecisionOutput, loadGatewayGrpc } from '@gateway/proto';
import { freePort } from '@gateway/testing';
import type { GuardText } from '../guardrails/guard-context.js';

/** The secret the fake check finds. */
export const FAKE_SECRET = 'AKIAABCDEFGHIJKLMNOP';

/** The placeholder a masked secret becomes. */
export const FAKE_PLACEHOLDER = '<AWS_ACCESS_KEY_1>';

/** One call the fake check answered. */
export interface FakeCheckCall {
  readonly texts: readonly GuardText[];
  readonly final: boolean;
  readonly response: CheckResponseOutput;
}

/** The characters at the end of `text` that could start `secret` (a proper prefix of it). */
export function heldTail(text: string, secret: string): number {
  for (let length = Math.min(secret.length - 1, text.length); length > 0; length--) if (text.endsWith(secret.slice(0, length))) return length;
  return 0;
}

/** The fake check's answer for one window: masking (`mask`) or blocking the secret. */
export function fakeCheckResponse(texts: readonly GuardText[], final: boolean, action: 'mask' | 'block'): CheckResponseOutput {
  const decisions: GuardDecisionOutput[] = [];
  let blocked = false;
  const results = texts.map(({ path, text }) => {
    const held = final ? 0 : heldTail(text, FAKE_SECRET);
    const released = text.slice(0, text.length - held);
    let at = released.indexOf(FAKE_SECRET);
    while (at >= 0) {
      decisions.push({
        policy: 'secrets',
        check: 'keys',
        point: 'POINT_OUTPUT',
        action: action === 'mask' ? 'ACTION_MASK' : 'ACTION_BLOCK',
        enforced: true,
        entity: 'aws_access_key',
        path,
        start: at,
        end: at + FAKE_SECRET.length,
        error: '',
      });
      if (action === 'block') blocked = true;
      at = released.indexOf(FAKE_SECRET, at + 1);
    }
    return { text: released.split(FAKE_SECRET).join(FAKE_PLACEHOLDER), held_chars: held };
  });
  return {
    blocked,
    blocked_by_policy: blocked ? 'secrets' : '',
    blocked_by_check: blocked ? 'keys' : '',
    texts: blocked ? [] : results,
    decisions,
    placeholders: [],
  };
}

/** A fake check that records its calls and answers each at once. */
export function fakeStreamCheck(action: 'mask' | 'block' = 'mask'): {
  calls: FakeCheckCall[];
  check(texts: readonly GuardText[], final: boolean): Promise<CheckResponseOutput>;
} {
  const calls: FakeCheckCall[] = [];
  return {
    calls,
    async check(texts, final) {
      const response = fakeCheckResponse(texts, final, action);
      calls.push({ texts: texts.map((text) => ({ ...text })), final, response });
      return response;
    },
  };
}

/** A running guard service whose Check answers as fakeCheckResponse does. */
export interface FakeStreamGuard {
  /** Its address (host:port). */
  readonly address: string;
  /** Every Check received, in order. */
  readonly checks: CheckRequestOutput[];
  close(): Promise<void>;
}

/**
 * Starts a real grpc-js GuardService on a free port whose Check masks or blocks FAKE_SECRET and,
 * on a window that is not final, holds back a tail that could start it; its other methods are
 * unimplemented.
 */
export async function startFakeStreamGuard(action: 'mask' | 'block'): Promise<FakeStreamGuard> {
  const checks: CheckRequestOutput[] = [];
  const handlers = {
    Check: unary(async (request: CheckRequestOutput) => {
      checks.push(request);
      return fakeCheckResponse(
        request.texts.map((text) => ({ path: text.path ?? '', text: text.text ?? '' })),
        request.final === true,
        action,
      );
    }, 'Check'),
  };
  const server = createGatewayServer([
    {
      name: 'gateway.guard.v1.GuardService',
      definition: loadGatewayGrpc().gateway.guard.v1.GuardService.service,
      handlers: handlers as unknown as GatewayService['handlers'],
    },
  ]);
  const port = await server.listen(`127.0.0.1:${await freePort()}`);
  return { address: `127.0.0.1:${port}`, checks, close: () => server.shutdown(0) };
}
