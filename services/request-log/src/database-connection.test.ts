import { ConfigError } from '@gateway/config';
import { describe, expect, it } from 'vitest';
import { databaseClientConfig, type DatabaseSettings, databaseFailure } from './database-connection.js';

const URL_BASE = 'postgres://gateway:s3cret@db.example.com:5432/gateway';

describe('the request log connection to PostgreSQL', () => {
  it('connects without TLS when no sslmode is given, never reading PGSSLMODE', () => {
    expect(databaseClientConfig({ url: URL_BASE })).toMatchObject({ host: 'db.example.com', port: 5432, user: 'gateway', database: 'gateway', ssl: false });
  });

  it("reads sslmode as libpq does: require encrypts without verifying, verify-full verifies (the URL's sslmode winning over the setting)", () => {
    expect(databaseClientConfig({ url: `${URL_BASE}?sslmode=require` }).ssl).toEqual({ rejectUnauthorized: false });
    expect(databaseClientConfig({ url: `${URL_BASE}?sslmode=prefer` }).ssl).toEqual({ rejectUnauthorized: false });
    expect(databaseClientConfig({ url: URL_BASE, sslMode: 'require' }).ssl).toEqual({ rejectUnauthorized: false });
    expect(databaseClientConfig({ url: `${URL_BASE}?sslmode=verify-full`, sslMode: 'require' }).ssl).toEqual({});
    expect(databaseClientConfig({ url: `${URL_BASE}?sslmode=disable`, sslMode: 'verify-full' }).ssl).toBe(false);
    expect(databaseClientConfig({ url: `${URL_BASE}?sslmode=verify-full&sslrootcert=system` }).ssl).toEqual({});
  });

  // Each setting the request log refuses, and the exact error: none shows the URL's password.
  const invalid: Array<[DatabaseSettings, string]> = [
    [
      { url: `${URL_BASE}?sslmode=allow` },
      "invalid configuration: DATABASE_URL's sslmode: sslmode=allow (plaintext first, TLS if the server insists) is not supported: use 'disable' or 'require'",
    ],
    [
      { url: URL_BASE, sslMode: 'no-verify' },
      "invalid configuration: REQUEST_LOG_DATABASE_SSLMODE: sslmode=no-verify is node-postgres's own, not libpq's: use 'require' (encrypted, not verified)",
    ],
    [{ url: `${URL_BASE}?sslmode=strict` }, "invalid configuration: DATABASE_URL's sslmode must be one of disable, prefer, require, verify-ca, verify-full"],
    [
      { url: `${URL_BASE}?ssl=true` },
      "invalid configuration: DATABASE_URL sets 'ssl': say what TLS you want with sslmode (disable, require, verify-full, ...)",
    ],
    [
      { url: `${URL_BASE}?uselibpqcompat=false&sslmode=require` },
      'invalid configuration: DATABASE_URL sets uselibpqcompat=false: the request log always reads sslmode as libpq does; remove it',
    ],
    [
      { url: URL_BASE, caFile: '/etc/hosts' },
      'invalid configuration: REQUEST_LOG_DATABASE_CA_FILE is set but sslmode is disable: set sslmode=verify-full (or require, verify-ca)',
    ],
    [
      { url: `${URL_BASE}?sslmode=verify-full`, caFile: '/nonexistent/ca.crt' },
      'invalid configuration: REQUEST_LOG_DATABASE_CA_FILE /nonexistent/ca.crt cannot be read',
    ],
    [{ url: `${URL_BASE}?sslmode=require&sslrootcert=system` }, "invalid configuration: DATABASE_URL's sslrootcert=system needs sslmode=verify-full"],
  ];

  it.each(invalid)('refuses %o', (settings, message) => {
    expect(() => databaseClientConfig(settings)).toThrow(new ConfigError(message));
  });

  it('refuses verify-ca without a CA, as pg-connection-string warns', () => {
    expect(() => databaseClientConfig({ url: `${URL_BASE}?sslmode=verify-ca` })).toThrow(
      /^invalid configuration: DATABASE_URL: SECURITY WARNING: Using sslmode=verify-ca requires specifying a CA/,
    );
  });

  it('names a failure by what it is: TLS, credentials, reachability', () => {
    expect(databaseFailure(Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' })).cause).toBe('tls');
    expect(databaseFailure(new Error('The server does not support SSL connections')).cause).toBe('tls');
    expect(databaseFailure(Object.assign(new Error('password authentication failed for user "gateway"'), { code: '28P01' })).cause).toBe('authentication');
    expect(databaseFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })).cause).toBe('unreachable');
    expect(databaseFailure(new Error('timeout exceeded when trying to connect')).cause).toBe('unreachable');
    expect(databaseFailure(Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' })).cause).toBe('read_only');
  });
});
