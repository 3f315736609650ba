/**
 * The request log against a PostgreSQL that speaks TLS (a throwaway server of this file's own,
 * its certificate for `localhost` signed by a CA made for the run): with the CA it connects,
 * verified, and logs requests; without it, or with another CA, it refuses and says TLS and
 * certificate, not reachability; and each sslmode does what libpq documents.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { encodeUsageEvent } from '@gateway/messaging';
import { collectOutput, eventually, startTlsPostgres, type TlsPostgres } from '@gateway/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseClientConfig, type DatabaseSettings, databaseFailure } from './database-connection.js';
import { migrate } from './migrations.js';
import { startTestRequestLog } from './testing/request-log-service.js';
import { completedUsageEvent, testRequestLogSetting } from './testing/request-log-setting.js';

let server: TlsPostgres;

/** What one connection with these settings sees: whether it is encrypted, or the error it failed with. */
async function connectWith(settings: DatabaseSettings): Promise<{ encrypted: boolean } | { error: Error & { code?: string } }> {
  const client = new pg.Client({ ...databaseClientConfig(settings), connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    return { encrypted: rows[0]!.ssl };
  } catch (error) {
    return { error: error as Error };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The cause databaseFailure gives the error these settings fail with. */
async function refusal(settings: DatabaseSettings): Promise<string> {
  const outcome = await connectWith(settings);
  if (!('error' in outcome)) throw new Error('connected, expected a refusal');
  return databaseFailure(outcome.error).cause;
}

beforeAll(async () => {
  server = await startTlsPostgres();
}, 60_000);

afterAll(async () => {
  await server?.close();
}, 30_000);

describe('the request log on a PostgreSQL with TLS', () => {
  it('connects with the CA, verified (verify-full), migrates and logs a request', async () => {
    const pool = new pg.Pool({ ...databaseClientConfig({ url: server.url({ params: { sslmode: 'verify-full' } }), caFile: server.caFile }), max: 4 });
    pool.on('error', () => undefined);
    const setting = testRequestLogSetting('rltls');
    try {
      await migrate(pool);
      const { rows } = await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(rows[0]!.ssl).toBe(true);
      const service = await startTestRequestLog({ ...setting.dependencies, pool, aheadDays: 1 });
      try {
        const event = completedUsageEvent('key_TLSTLSTLSTLSTLS');
        const eventId = event.event_id!;
        await service.nc.jetstream().publish(setting.names.subject, encodeUsageEvent(event), { msgID: eventId });
        await eventually(
          async () => (await pool.query('SELECT 1 FROM request_log WHERE event_id = $1', [eventId])).rowCount === 1,
          'the request logged over TLS',
          20_000,
        );
      } finally {
        await service.stop();
      }
    } finally {
      await pool.end();
    }
  }, 60_000);

  it('refuses a certificate no given CA signed, and says TLS and certificate, not reachability, in its log', async () => {
    expect(await refusal({ url: server.url({ params: { sslmode: 'verify-full' } }) })).toBe('tls');
    expect(await refusal({ url: server.url({ params: { sslmode: 'verify-full' } }), caFile: server.otherCaFile })).toBe('tls');
    // The service itself, as an operator starts it with a URL that needs a CA it was not given.
    const child = spawn(process.execPath, [fileURLToPath(new URL('../dist/main.js', import.meta.url))], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: server.url({ database: 'postgres', params: { sslmode: 'verify-full' } }),
        NATS_URL: 'nats://127.0.0.1:1',
        REQUEST_LOG_LISTEN_ADDR: '127.0.0.1:0',
        REQUEST_LOG_METRICS_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = collectOutput(child);
    try {
      const line = await eventually(
        () => output.stdout.split('\n').find((entry) => entry.includes('request log schema not migrated')),
        'the service to log why it cannot migrate',
        20_000,
      );
      const logged = JSON.parse(line) as { msg: string; cause: string };
      expect(logged.cause).toBe('tls');
      expect(logged.msg).toMatch(/TLS connection to PostgreSQL failed/);
      expect(logged.msg).toMatch(/certificate/);
      expect(logged.msg).not.toMatch(/unreachable/i);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('takes each sslmode as libpq documents it', async () => {
    // The certificate is for localhost: 127.0.0.1 is the same server under a name it does not carry.
    const byAddress = (sslmode: string) => server.url({ host: '127.0.0.1', params: { sslmode } });
    // disable: no TLS at all.
    expect(await connectWith({ url: byAddress('disable') })).toEqual({ encrypted: false });
    // prefer and require without a CA: encrypted, the certificate not verified (no CA trusts it).
    expect(await connectWith({ url: byAddress('prefer') })).toEqual({ encrypted: true });
    expect(await connectWith({ url: byAddress('require') })).toEqual({ encrypted: true });
    // require with a CA is verify-ca: the chain verified against it, the name not checked.
    expect(await connectWith({ url: byAddress('require'), caFile: server.caFile })).toEqual({ encrypted: true });
    expect(await refusal({ url: byAddress('require'), caFile: server.otherCaFile })).toBe('tls');
    expect(await connectWith({ url: byAddress('verify-ca'), caFile: server.caFile })).toEqual({ encrypted: true });
    // verify-full checks the name too: right CA, wrong name, refused; the right name connects.
    const wrongName = await connectWith({ url: byAddress('verify-full'), caFile: server.caFile });
    expect('error' in wrongName && wrongName.error.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(await connectWith({ url: server.url({ params: { sslmode: 'verify-full' } }), caFile: server.caFile })).toEqual({ encrypted: true });
    // The setting is the default of a URL without sslmode, as PGSSLMODE is libpq's.
    expect(await connectWith({ url: server.url(), sslMode: 'verify-full', caFile: server.caFile })).toEqual({ encrypted: true });
  }, 60_000);
});
