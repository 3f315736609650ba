/**
 * A server's bounded connection age (GOAWAY, then a grace for the calls on the connection) under
 * a client that keeps calling, unary and on call streams: the client moves to new connections, and
 * not one call fails on the way, a streamed call that outlives its connection's age included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadGatewayGrpc, type AuthServiceClient, type CheckKeyRequest, type CheckKeyRequestOutput, type CheckKeyResponseOutput } from '@gateway/proto';
import { callUnary, createClient } from './client.js';
import { createGatewayServer, unary } from './server.js';
import { serveStreamedCalls, StreamedCalls } from './streamed-calls.js';

const definition = loadGatewayGrpc().gateway.auth.v1.AuthService;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a server that bounds its connections age', () => {
  it('moves its clients to new connections without failing a call', async () => {
    /** The connections call streams were opened on. */
    const peers = new Set<string>();
    // Answers after reserve_tokens ms, with the connection (the caller's address and port) it came on.
    const check = async (request: CheckKeyRequestOutput, call?: { getPeer(): string }) => {
      await sleep(Number(request.reserve_tokens ?? 0));
      return { decision: 'DECISION_ALLOW' as const, reservation_id: call?.getPeer() ?? '' };
    };
    const decide = serveStreamedCalls({ check_key: (request: CheckKeyRequestOutput) => check(request) }, 'Decide');
    const server = createGatewayServer(
      [
        {
          name: 'gateway.auth.v1.AuthService',
          definition: definition.service,
          handlers: {
            CheckKey: unary((request: CheckKeyRequestOutput, call) => check(request, call), 'CheckKey'),
            Decide: (call: Parameters<typeof decide.handler>[0]) => {
              peers.add(call.getPeer());
              decide.handler(call);
            },
          } as never,
          drain: decide.drain,
        },
      ],
      { 'grpc.max_connection_age_ms': 300, 'grpc.max_connection_age_grace_ms': 5_000 },
    );
    const port = await server.listen('127.0.0.1:0');
    cleanups.push(() => server.shutdown(100));
    const client = createClient<AuthServiceClient>(definition, `127.0.0.1:${port}`);
    const calls = new StreamedCalls<{ check_key: [CheckKeyRequest, CheckKeyResponseOutput] }>({
      open: () => client.Decide() as never,
      streams: 2,
      maxStreamAgeMs: 200,
      unary: { check_key: (request, options) => callUnary(client, client.CheckKey, request, options) },
    });
    cleanups.push(() => client.close());
    cleanups.push(() => calls.close(100));

    // A call that takes longer than its connection may live: the grace lets it finish.
    const long = calls.call('check_key', { api_key: 'k', reserve_tokens: 1_500 }, { deadlineMs: 15_000 });
    const unaryPeers = new Set<string>();
    // At least 2 s of calls, and on until the client has been moved several times (a loaded machine
    // answers fewer calls a second); a hard stop well inside the test's time.
    const until = Date.now() + 2_000;
    const giveUpAt = Date.now() + 20_000;
    let answered = 0;
    const moved = () => answered > 50 && unaryPeers.size >= 3 && peers.size >= 3;
    while ((Date.now() < until || !moved()) && Date.now() < giveUpAt) {
      const [streamed, direct] = await Promise.all([
        calls.call('check_key', { api_key: 'k', reserve_tokens: 5 }, { deadlineMs: 10_000 }),
        callUnary<CheckKeyRequest, CheckKeyResponseOutput>(client, client.CheckKey, { api_key: 'k', reserve_tokens: 5 }, { deadlineMs: 10_000 }),
      ]);
      expect(streamed.decision).toBe('DECISION_ALLOW');
      unaryPeers.add(direct.reservation_id!);
      answered += 2;
    }
    expect((await long).decision).toBe('DECISION_ALLOW');
    expect(answered).toBeGreaterThan(50);
    // Connections of about 300 ms over 2 s or more: the client was moved several times.
    expect(unaryPeers.size).toBeGreaterThanOrEqual(3);
    expect(peers.size).toBeGreaterThanOrEqual(3);
  });
});
