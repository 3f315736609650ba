/**
 * How the request log connects to PostgreSQL: DATABASE_URL read with libpq's meaning of `sslmode`
 * (pg-connection-string's `useLibpqCompat`, the maintained switch to libpq's semantics; without it
 * the pinned `pg` reads `require` and `verify-ca` as `verify-full`), and what a failed connection
 * was, in words an operator acts on (TLS, credentials, reachability).
 *
 * | sslmode | encrypted | certificate verified | host name checked |
 * |---|---|---|---|
 * | `disable` (also when none is given) | no | no | no |
 * | `prefer` | yes (no plaintext fallback: node-postgres refuses a server without TLS, libpq would not) | no | no |
 * | `require` | yes | only with a CA (sslrootcert or REQUEST_LOG_DATABASE_CA_FILE): then as `verify-ca` | no |
 * | `verify-ca` | yes | yes, against the CA (one is required) | no |
 * | `verify-full` | yes | yes, against the CA, or Node's built-in CAs without one | yes |
 *
 * `sslmode` and `sslrootcert` in the URL win over REQUEST_LOG_DATABASE_SSLMODE and
 * REQUEST_LOG_DATABASE_CA_FILE, as libpq's connection string wins over PGSSLMODE and PGSSLROOTCERT.
 */
import { accessSync, constants } from 'node:fs';
import { ConfigError } from '@gateway/config';
import type pg from 'pg';
import { parse, toClientConfig } from 'pg-connection-string';

/** The sslmodes the request log takes: libpq's, but `allow` (plaintext first), which node-postgres cannot do. */
export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;

/** One of SSL_MODES. */
export type SslMode = (typeof SSL_MODES)[number];

/** Where and how to connect: DATABASE_URL, and the defaults REQUEST_LOG_DATABASE_SSLMODE and REQUEST_LOG_DATABASE_CA_FILE. */
export interface DatabaseSettings {
  url: string;
  sslMode?: string;
  caFile?: string;
}

/** Why each sslmode the request log does not take is refused, and what to use instead. */
const REFUSED_MODES: Record<string, string> = {
  allow: "sslmode=allow (plaintext first, TLS if the server insists) is not supported: use 'disable' or 'require'",
  'no-verify': "sslmode=no-verify is node-postgres's own, not libpq's: use 'require' (encrypted, not verified)",
};

/**
 * The pg client settings of `settings`; throws a ConfigError naming what is wrong (never the URL,
 * which holds the password).
 */
export function databaseClientConfig(settings: DatabaseSettings): pg.ClientConfig {
  let url: URL;
  try {
    url = new URL(settings.url);
  } catch {
    throw new ConfigError('invalid configuration: DATABASE_URL is not a URL');
  }
  const params = url.searchParams;
  const compat = params.get('uselibpqcompat');
  if (compat !== null && compat !== 'true')
    throw new ConfigError(`invalid configuration: DATABASE_URL sets uselibpqcompat=${compat}: the request log always reads sslmode as libpq does; remove it`);
  params.delete('uselibpqcompat');
  if (params.has('ssl'))
    throw new ConfigError("invalid configuration: DATABASE_URL sets 'ssl': say what TLS you want with sslmode (disable, require, verify-full, ...)");
  const fromUrl = params.get('sslmode');
  const mode = fromUrl ?? settings.sslMode ?? 'disable';
  const source = fromUrl !== null ? "DATABASE_URL's sslmode" : 'REQUEST_LOG_DATABASE_SSLMODE';
  if (REFUSED_MODES[mode]) throw new ConfigError(`invalid configuration: ${source}: ${REFUSED_MODES[mode]}`);
  if (!(SSL_MODES as readonly string[]).includes(mode)) throw new ConfigError(`invalid configuration: ${source} must be one of ${SSL_MODES.join(', ')}`);
  let rootCert = params.get('sslrootcert') ?? settings.caFile;
  const rootSource = params.has('sslrootcert') ? "DATABASE_URL's sslrootcert" : 'REQUEST_LOG_DATABASE_CA_FILE';
  if (rootCert === 'system') {
    // libpq 16's sslrootcert=system: the system's CAs, and only with verify-full (a public CA
    // vouches for names, not for a server of the operator's).
    if (mode !== 'verify-full') throw new ConfigError(`invalid configuration: ${rootSource}=system needs sslmode=verify-full`);
    rootCert = undefined;
    params.delete('sslrootcert');
  }
  if (rootCert !== undefined) {
    if (mode === 'disable')
      throw new ConfigError(`invalid configuration: ${rootSource} is set but sslmode is disable: set sslmode=verify-full (or require, verify-ca)`);
    try {
      accessSync(rootCert, constants.R_OK);
    } catch {
      throw new ConfigError(`invalid configuration: ${rootSource} ${rootCert} cannot be read`);
    }
    params.set('sslrootcert', rootCert);
  }
  params.set('sslmode', mode);
  try {
    const config = toClientConfig(parse(url.toString(), { useLibpqCompat: true }));
    // TLS stated either way: pg would otherwise read PGSSLMODE from the environment.
    return { ...config, ssl: config.ssl ?? false };
  } catch (error) {
    throw new ConfigError(`invalid configuration: DATABASE_URL: ${(error as Error).message}`);
  }
}

/** What a failed connection or query was. */
export type DatabaseFailureCause = 'tls' | 'authentication' | 'unreachable' | 'read_only' | 'query';

/** Node's codes for a certificate it could not trust, or a TLS handshake that failed. */
const TLS_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Codes of a server that could not be reached or went away. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
]);

/** Why a connection or statement failed, and the words the log says it in. */
export function databaseFailure(error: unknown): { cause: DatabaseFailureCause; summary: string } {
  const { code = '', message = '' } = (error ?? {}) as { code?: string; message?: string };
  if (TLS_CODES.has(code) || /^ERR_(SSL|TLS)_/.test(code) || /does not support SSL|no encryption/.test(message))
    return {
      cause: 'tls',
      summary: `the TLS connection to PostgreSQL failed: ${message || code} (check sslmode, and the CA in REQUEST_LOG_DATABASE_CA_FILE or sslrootcert that signed the server's certificate)`,
    };
  if (code === '28P01' || code === '28000')
    return { cause: 'authentication', summary: `PostgreSQL refused the connection: ${message} (user, password or pg_hba.conf)` };
  if (code === '25006') return { cause: 'read_only', summary: `PostgreSQL is read-only (a standby, or a failover under way): ${message}` };
  if (UNREACHABLE_CODES.has(code) || /timeout|terminated|Connection ended|ended unexpectedly/i.test(message))
    return { cause: 'unreachable', summary: `PostgreSQL is unreachable: ${message || code}` };
  return { cause: 'query', summary: `PostgreSQL failed: ${message || code}` };
}
