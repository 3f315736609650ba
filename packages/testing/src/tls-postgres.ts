/**
 * A throwaway PostgreSQL server of a test's own that speaks TLS: a cluster made by `initdb` in a
 * temporary folder, on a loopback port of its own, with `ssl=on` and a server certificate for
 * `localhost` signed by a CA made for the run (the openssl command line), beside a second CA that
 * signed nothing. Stopped and started again on the same port and files, it is a database outage
 * that touches no other test. Needs PostgreSQL's server binaries (Debian's postgresql package:
 * /usr/lib/postgresql/<version>/bin, or POSTGRES_BIN_DIR) and openssl; as root (PostgreSQL
 * refuses to run as root) its commands run as the `postgres` user through runuser.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.js';

const run = promisify(execFile);

/** The name the server's certificate is for (its only subject alternative name). */
export const TLS_POSTGRES_HOST = 'localhost';

/** A started TLS PostgreSQL; see the file's comment. */
export interface TlsPostgres {
  /** Its loopback port. */
  readonly port: number;
  /** The CA (PEM file) that signed the server's certificate. */
  readonly caFile: string;
  /** A CA (PEM file) that signed nothing the server shows. */
  readonly otherCaFile: string;
  /** postgres://postgres@<host>:<port>/<database>?<params>, trust authentication; host `localhost` unless given. */
  url(options?: { host?: string; database?: string; params?: Record<string, string> }): string;
  /** Whether the server runs. */
  readonly running: boolean;
  /** Stops the server (fast shutdown: its connections end), keeping its files: an outage. */
  stop(): Promise<void>;
  /** Starts it again on the same port and files; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its folder. */
  close(): Promise<void>;
}

/** The folder of PostgreSQL's server binaries: POSTGRES_BIN_DIR, or Debian's newest. */
function binDir(): string {
  if (process.env.POSTGRES_BIN_DIR) return process.env.POSTGRES_BIN_DIR;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error('no PostgreSQL server binaries: install postgresql (Debian: /usr/lib/postgresql/<version>/bin) or set POSTGRES_BIN_DIR');
  return join(root, versions[0]!, 'bin');
}

/** The uid and gid the server runs as: `postgres` when this process is root, else this process's own. */
async function serverUser(): Promise<{ uid: number; gid: number; asRoot: boolean }> {
  if (process.getuid?.() !== 0) return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0, asRoot: false };
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), asRoot: true };
}

/** Makes a CA, a server certificate for localhost it signs, and another CA, in `folder`. */
async function makeCertificates(folder: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  for (const name of ['ca', 'other-ca'])
    await run('openssl', [
      'req',
      '-x509',
      ...ec,
      ...ca,
      '-days',
      '2',
      '-subj',
      `/CN=gateway test ${name}`,
      '-keyout',
      join(folder, `${name}.key`),
      '-out',
      join(folder, `${name}.crt`),
    ]);
  await run('openssl', ['req', '-new', ...ec, '-subj', `/CN=${TLS_POSTGRES_HOST}`, '-keyout', join(folder, 'server.key'), '-out', join(folder, 'server.csr')]);
  writeFileSync(
    join(folder, 'server.ext'),
    `subjectAltName=DNS:${TLS_POSTGRES_HOST}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`,
  );
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    join(folder, 'server.csr'),
    '-CA',
    join(folder, 'ca.crt'),
    '-CAkey',
    join(folder, 'ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    join(folder, 'server.ext'),
    '-out',
    join(folder, 'server.crt'),
  ]);
}

/** Starts a TLS PostgreSQL of the test's own; see the file's comment. Close it after. */
export async function startTlsPostgres(): Promise<TlsPostgres> {
  const bin = binDir();
  const user = await serverUser();
  const folder = mkdtempSync(join(tmpdir(), 'gateway-tls-postgres-'));
  const data = join(folder, 'data');
  const log = join(folder, 'postgres.log');
  /** Runs one of PostgreSQL's programs as the server's user. */
  const asServer = (program: string, args: string[]) =>
    user.asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]) : run(join(bin, program), args);
  let port = 0;
  let running = false;
  try {
    chownSync(folder, user.uid, user.gid);
    await makeCertificates(folder);
    // PostgreSQL reads its key only when its server user owns it and no one else may read it.
    chownSync(join(folder, 'server.key'), user.uid, user.gid);
    chmodSync(join(folder, 'server.key'), 0o600);
    chownSync(join(folder, 'server.crt'), user.uid, user.gid);
    await asServer('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  const options = (chosen: number) =>
    [
      `-p ${chosen}`,
      "-c listen_addresses='127.0.0.1'",
      `-c unix_socket_directories='${folder}'`,
      '-c ssl=on',
      `-c ssl_cert_file='${join(folder, 'server.crt')}'`,
      `-c ssl_key_file='${join(folder, 'server.key')}'`,
      '-c fsync=off',
      '-c max_connections=50',
    ].join(' ');
  const start = async () => {
    await asServer('pg_ctl', ['-D', data, '-l', log, '-o', options(port), '-w', '-t', '60', 'start']);
    running = true;
  };
  // A port leased here may still be bound by a process outside the leases: then another.
  for (let attempt = 0; ; attempt += 1) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      const output = existsSync(log) ? readFileSync(log, 'utf8') : '';
      if (attempt >= 4 || !/could not bind|Address already in use/.test(output)) {
        rmSync(folder, { recursive: true, force: true });
        throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${output}`);
      }
    }
  }
  const stop = async () => {
    if (!running) return;
    await asServer('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    running = false;
  };
  return {
    port,
    caFile: join(folder, 'ca.crt'),
    otherCaFile: join(folder, 'other-ca.crt'),
    url: ({ host = TLS_POSTGRES_HOST, database = 'postgres', params = {} } = {}) => {
      const query = new URLSearchParams(params).toString();
      return `postgres://postgres@${host}:${port}/${database}${query ? `?${query}` : ''}`;
    },
    get running() {
      return running;
    },
    stop,
    start,
    close: async () => {
      await stop().catch(() => undefined);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
