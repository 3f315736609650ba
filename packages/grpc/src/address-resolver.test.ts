/**
 * The `dns:` resolver against a real DNS server on loopback (@gateway/testing) and real grpc-js
 * servers on 127.0.0.2-4 (one port, as the replicas behind a headless Service): replicas added to
 * the name get calls, unary and on call streams, and replicas removed from it get none, while
 * every connection stays up (nothing breaks to make grpc-js look the name up again).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, freePort, startDnsServer, type DnsServer } from '@gateway/testing';
import { loadGatewayGrpc, type AuthServiceClient, type CheckKeyRequest, type CheckKeyResponseOutput } from '@gateway/proto';
import { nameKey, REFRESH_OPTION, watchAddresses } from './address-resolver.js';
import { callUnary, createClient } from './client.js';
import { createGatewayServer, unary } from './server.js';
import { serveStreamedCalls, StreamedCalls } from './streamed-calls.js';

const definition = loadGatewayGrpc().gateway.auth.v1.AuthService;
const NAME = 'auth.gateway.test';
/** Looked up again every 200 ms here (5 s by default), so that the test is short. */
const FAST = { [REFRESH_OPTION]: 200 };

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A replica at `host:port` whose CheckKey answers with its own host as the reservation id. */
async function startReplica(host: string, port: number): Promise<{ streams: () => number }> {
  const check = async () => ({ decision: 'DECISION_ALLOW' as const, reservation_id: host });
  const decide = serveStreamedCalls({ check_key: check }, 'Decide');
  const server = createGatewayServer([
    {
      name: 'gateway.auth.v1.AuthService',
      definition: definition.service,
      handlers: { CheckKey: unary(check, 'CheckKey'), Decide: decide.handler } as never,
      drain: decide.drain,
    },
  ]);
  await server.listen(`${host}:${port}`);
  cleanups.push(() => server.shutdown(100));
  return { streams: () => decide.openStreams };
}

/** Which replicas answered `count` unary calls, as counts by host. */
async function unaryAnswers(client: AuthServiceClient, count: number): Promise<Record<string, number>> {
  const answers: Record<string, number> = {};
  for (let index = 0; index < count; index += 1) {
    const response = await callUnary<CheckKeyRequest, CheckKeyResponseOutput>(client, client.CheckKey, { api_key: 'k' }, { deadlineMs: 2_000 });
    answers[response.reservation_id!] = (answers[response.reservation_id!] ?? 0) + 1;
  }
  return answers;
}

async function setUp(): Promise<{ dns: DnsServer; port: number }> {
  const dns = await startDnsServer();
  cleanups.push(() => dns.stop());
  return { dns, port: await freePort() };
}

describe('nameKey', () => {
  it('is the same however a DNS target is written, and undefined for another scheme', () => {
    expect(nameKey('dns:///auth:50051')).toBe('|auth:50051');
    expect(nameKey('dns:auth:50051')).toBe('|auth:50051');
    expect(nameKey('auth:50051')).toBe('|auth:50051');
    expect(nameKey('dns://10.0.0.10:53/auth:50051')).toBe('10.0.0.10:53|auth:50051');
    expect(nameKey('ipv4:127.0.0.1:1,127.0.0.1:2')).toBeUndefined();
    expect(nameKey('unix:/run/auth.sock')).toBeUndefined();
  });
});

describe('a channel on a DNS name', () => {
  it('asks the DNS server its target names, and spreads unary calls over a replica added later', async () => {
    const { dns, port } = await setUp();
    await startReplica('127.0.0.2', port);
    await startReplica('127.0.0.3', port);
    dns.set(NAME, ['127.0.0.2']);
    const client = createClient<AuthServiceClient>(definition, dns.target(NAME, port), FAST);
    cleanups.push(() => client.close());
    expect(await unaryAnswers(client, 10)).toEqual({ '127.0.0.2': 10 });

    const seen: string[][] = [];
    const unwatch = watchAddresses(dns.target(NAME, port), (addresses) => seen.push([...addresses]));
    cleanups.push(unwatch);
    dns.set(NAME, ['127.0.0.2', '127.0.0.3']);
    await eventually(async () => Object.keys(await unaryAnswers(client, 4)).length === 2 || undefined, 'both replicas to answer', 5_000, 50);
    const answers = await unaryAnswers(client, 20);
    expect(answers).toEqual({ '127.0.0.2': 10, '127.0.0.3': 10 });
    expect(seen.at(-1)).toEqual([`127.0.0.2:${port}`, `127.0.0.3:${port}`]);

    // Removed from the name: no call reaches it, though it still serves.
    dns.set(NAME, ['127.0.0.3']);
    await eventually(async () => (await unaryAnswers(client, 4))['127.0.0.2'] === undefined || undefined, 'the removed replica to get no call', 5_000, 50);
    expect(await unaryAnswers(client, 10)).toEqual({ '127.0.0.3': 10 });
  });

  it('keeps the last address set while the DNS server does not know the name', async () => {
    const { dns, port } = await setUp();
    await startReplica('127.0.0.2', port);
    dns.set(NAME, ['127.0.0.2']);
    const client = createClient<AuthServiceClient>(definition, dns.target(NAME, port), FAST);
    cleanups.push(() => client.close());
    expect(await unaryAnswers(client, 3)).toEqual({ '127.0.0.2': 3 });
    dns.set(NAME, []);
    const asked = dns.queries.get(NAME) ?? 0;
    await eventually(() => (dns.queries.get(NAME) ?? 0) > asked + 2 || undefined, 'the name to be asked again', 5_000, 50);
    expect(await unaryAnswers(client, 3)).toEqual({ '127.0.0.2': 3 });
  });
});

describe('call streams on a DNS name', () => {
  it('as many streams on each replica, spread again within seconds of a replica added or removed', async () => {
    const { dns, port } = await setUp();
    const replicas = {
      '127.0.0.2': await startReplica('127.0.0.2', port),
      '127.0.0.3': await startReplica('127.0.0.3', port),
      '127.0.0.4': await startReplica('127.0.0.4', port),
    };
    dns.set(NAME, ['127.0.0.2']);
    const target = dns.target(NAME, port);
    const client = createClient<AuthServiceClient>(definition, target, FAST);
    const calls = new StreamedCalls<{ check_key: [CheckKeyRequest, CheckKeyResponseOutput] }>({
      open: () => client.Decide() as never,
      streams: 4,
      target,
      // Never replaced by age here: only the change of the address set moves them.
      maxStreamAgeMs: 10 * 60_000,
      unary: { check_key: (request, options) => callUnary(client, client.CheckKey, request, options) },
    });
    cleanups.push(() => client.close());
    cleanups.push(() => calls.close(100));
    const streamsOn = () => Object.fromEntries(Object.entries(replicas).map(([host, replica]) => [host, replica.streams()]));
    await eventually(() => calls.openStreams === 4 || undefined, 'the streams to open', 5_000, 20);
    expect(streamsOn()).toEqual({ '127.0.0.2': 4, '127.0.0.3': 0, '127.0.0.4': 0 });

    // Three replicas: four streams become six, two on each, and the calls follow.
    dns.set(NAME, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
    await eventually(
      () => (calls.openStreams === 6 && JSON.stringify(streamsOn()) === JSON.stringify({ '127.0.0.2': 2, '127.0.0.3': 2, '127.0.0.4': 2 })) || undefined,
      'two streams on each replica',
      5_000,
      20,
    );
    const answers: Record<string, number> = {};
    for (let index = 0; index < 60; index += 1) {
      const response = await calls.call('check_key', { api_key: 'k' }, { deadlineMs: 2_000 });
      answers[response.reservation_id!] = (answers[response.reservation_id!] ?? 0) + 1;
    }
    // A third each, give or take a call the picker sent past a stream busy at that moment: streams
    // left on one replica (four and one and one) would give it two thirds.
    expect(Object.keys(answers).sort()).toEqual(['127.0.0.2', '127.0.0.3', '127.0.0.4']);
    for (const count of Object.values(answers)) expect(Math.abs(count - 20)).toBeLessThanOrEqual(3);

    // One removed from the name: its streams move to the two left, two each.
    dns.set(NAME, ['127.0.0.3', '127.0.0.4']);
    await eventually(
      () => JSON.stringify(streamsOn()) === JSON.stringify({ '127.0.0.2': 0, '127.0.0.3': 2, '127.0.0.4': 2 }) || undefined,
      'the streams to leave the removed replica',
      5_000,
      20,
    );
  });
});
