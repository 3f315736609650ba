/**
 * A PgBouncer of a test's own in front of a PostgreSQL: Debian's `pgbouncer` binary (the package
 * scripts/test.sh installs when missing, or PGBOUNCER_BIN), on a loopback port from freePort, its
 * configuration, pid and log in a temporary folder. Every database name is passed through to the
 * server (`* = host=... port=...`), trust authentication for `postgres`, and the pool mode asked
 * for (transaction by default, as a deployment runs it). The admin console (database `pgbouncer`)
 * answers `SHOW ...` for user postgres. PgBouncer refuses to run as root: as root it is started as
 * root and switches to the `postgres` user itself (`-u postgres`).
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type ServerProcess, serverProcess } from './processes.js';

/** A started PgBouncer; see the file's comment. */
export interface PgBouncer extends ServerProcess {
  /** Its loopback port. */
  readonly port: number;
  /** The settings of its configuration's [pgbouncer] section, as written. */
  readonly settings: Readonly<Record<string, string>>;
  /** postgres://postgres@127.0.0.1:<port>/<database> through it. */
  url(database: string): string;
  /** Stops it and deletes its folder. */
  close(): Promise<void>;
}

/** How the PgBouncer pools. */
export interface PgBouncerOptions {
  /** The PostgreSQL behind it (a URL whose host and port are used); the maintenance database's URL will do. */
  server: string;
  /** `pool_mode`: transaction by default. */
  poolMode?: 'session' | 'transaction' | 'statement';
  /** Server connections per database and user (`default_pool_size`); 2 by default, so that a client's transactions land on different ones. */
  poolSize?: number;
}

/** The pgbouncer binary: PGBOUNCER_BIN, else the first that runs of Debian's places. */
export function pgbouncerBinary(): string | undefined {
  const candidates = process.env.PGBOUNCER_BIN
    ? [process.env.PGBOUNCER_BIN]
    : ['pgbouncer', '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'];
  return candidates.find((candidate) => spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** Starts a PgBouncer of the test's own in front of `options.server`; close it after. */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary)
    throw new Error('pgbouncer is not installed: run `sudo apt-get install -y pgbouncer` (scripts/test.sh installs it when run as root) or set PGBOUNCER_BIN');
  const target = new URL(options.server);
  const folder = mkdtempSync(join(tmpdir(), 'gateway-pgbouncer-'));
  const asRoot = process.getuid?.() === 0;
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(folder, 'userlist.txt'),
    admin_users: 'postgres',
    pool_mode: options.poolMode ?? 'transaction',
    default_pool_size: String(options.poolSize ?? 2),
    max_client_conn: '200',
    server_reset_query: 'DISCARD ALL',
    logfile: join(folder, 'pgbouncer.log'),
    pidfile: join(folder, 'pgbouncer.pid'),
  };
  const config = [
    '[databases]',
    `* = host=${target.hostname} port=${target.port || '5432'}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([name, value]) => `${name} = ${value}`),
    '',
  ].join('\n');
  writeFileSync(join(folder, 'pgbouncer.ini'), config);
  writeFileSync(join(folder, 'userlist.txt'), '"postgres" ""\n');
  if (asRoot) {
    // It writes its log and pid file as postgres, once it switched to that user.
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(folder, uid, gid);
  }
  const bouncer = serverProcess(binary, [...(asRoot ? ['-u', 'postgres'] : []), join(folder, 'pgbouncer.ini')], port);
  try {
    await bouncer.start();
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    settings,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    get running() {
      return bouncer.running;
    },
    kill: (signal) => bouncer.kill(signal),
    start: () => bouncer.start(),
    close: async () => {
      await bouncer.kill('SIGTERM');
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
