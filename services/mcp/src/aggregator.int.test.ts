/**
 * The aggregated server's answers to what a client may send, against a real Redis (sessions) and
 * no upstream: the status and JSON-RPC error a client sees for each malformed or misplaced message,
 * and a session that belongs to the key that opened it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { Aggregator } from './aggregator.js';
import { ClientSessions } from './client-sessions.js';
import { NO_UPSTREAM_CREDENTIALS } from './upstream-credentials.js';
import { UpstreamPool } from './upstream-pool.js';

const prefix = `mcp-aggregator-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('mcp', 'silent');
let redis: RedisClient;
let aggregator: Aggregator;

async function send(messageJson: string, sessionId = '', keyId = 'key_A', protocolVersion = '') {
  const answer = await aggregator.handle({ caller: { keyId, teamId: '', toolAllowLists: [] }, sessionId, protocolVersion, messageJson });
  return {
    ...answer,
    body: answer.messageJson
      ? (JSON.parse(answer.messageJson) as { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } })
      : undefined,
  };
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
});

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  const pool = new UpstreamPool({ credentials: NO_UPSTREAM_CREDENTIALS, logger, timeoutMs: 1_000 });
  aggregator = new Aggregator({
    registry: { current: new Map() },
    pool,
    sessions: new ClientSessions(redis, { prefix, ttlSeconds: 60 }),
    logger,
    maxResponseBytes: 10_000,
    timeoutMs: 1_000,
  });
});

afterAll(async () => {
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('Aggregator', () => {
  it('opens a session on initialize, with the version asked for when supported, else the latest', async () => {
    const opened = await send(INITIALIZE);
    expect(opened.httpStatus).toBe(200);
    expect(opened.sessionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(opened.body?.result).toMatchObject({
      protocolVersion: '2025-06-18',
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: 'llm-gateway' },
    });
    const unknown = await send(INITIALIZE.replace('2025-06-18', '1999-01-01'));
    expect(unknown.body?.result?.protocolVersion).not.toBe('1999-01-01');
  });

  it('answers ping, an empty tools/list and an unknown method within a session, and accepts a notification', async () => {
    const { sessionId } = await send(INITIALIZE);
    expect((await send('{"jsonrpc":"2.0","id":"p","method":"ping"}', sessionId)).body).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    expect((await send('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', sessionId)).body?.result).toEqual({ tools: [] });
    expect((await send('{"jsonrpc":"2.0","id":3,"method":"sampling/nothing"}', sessionId)).body?.error?.code).toBe(-32601);
    expect(await send('{"jsonrpc":"2.0","method":"notifications/initialized"}', sessionId)).toMatchObject({ httpStatus: 202, messageJson: '' });
    const unknownTool = await send('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nowhere__x","arguments":{}}}', sessionId);
    expect(unknownTool.body?.error).toMatchObject({ code: -32602, message: 'Unknown tool: nowhere__x' });
    expect(unknownTool.toolCall).toMatchObject({ failed: true, errorCode: 'unknown_tool' });
  });

  it.each([
    ['not JSON', '{"jsonrpc":', 400, -32700],
    ['a batch', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600],
    ['not JSON-RPC', '{"hello":"world"}', 400, -32600],
    ['a wrong version', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600],
  ])('refuses %s with a 400 and a JSON-RPC error', async (_what, body, status, code) => {
    const answer = await send(body);
    expect(answer.httpStatus).toBe(status);
    expect(answer.body?.error?.code).toBe(code);
  });

  it('asks for a session, refuses an unknown, expired or another key’s one with a 404, and an unsupported version with a 400', async () => {
    expect((await send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')).httpStatus).toBe(400);
    expect((await send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 'x'.repeat(32))).httpStatus).toBe(404);
    const { sessionId } = await send(INITIALIZE);
    expect((await send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', sessionId, 'key_B')).httpStatus).toBe(404);
    const refused = await send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', sessionId, 'key_A', '2099-01-01');
    expect(refused.httpStatus).toBe(400);
    expect(refused.body?.error?.message).toMatch(/unsupported MCP-Protocol-Version/);
  });
});
