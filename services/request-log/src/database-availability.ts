/**
 * Whether PostgreSQL takes writes, as the writers need to know it: after a failed INSERT one probe
 * tells a database that is away (unreachable, refusing connections, a standby during a failover)
 * from a batch that failed on its own. While it is away a probe runs every `intervalMs`, and the
 * writers hold their batches (their messages unacknowledged, kept from redelivery) until the
 * first probe that succeeds: the backlog is written as soon as the database answers, not when
 * each message's redelivery delay comes round.
 */
import type { Logger } from '@gateway/logger';
import type pg from 'pg';
import { databaseFailure } from './database-connection.js';

/** What the writers ask; see the file's comment. */
export interface DatabaseAvailability {
  /** Whether PostgreSQL was last seen taking writes. */
  readonly up: boolean;
  /** Whether close() was called: nothing is held any more. */
  readonly closed: boolean;
  /**
   * After a write failed: resolves true when PostgreSQL takes writes now (the failure
   * was the write's own), false when it is away (and probing starts).
   */
  answersAfterFailure(): Promise<boolean>;
  /** Resolves true once PostgreSQL takes writes again, false if closed first. */
  whenUp(): Promise<boolean>;
  /** Stops probing; whoever waits in whenUp() is told false. */
  close(): void;
}

/** Watches the pool's PostgreSQL; see the file's comment. */
export function watchDatabase(pool: pg.Pool, options: { intervalMs: number; logger: Logger }): DatabaseAvailability {
  const { logger } = options;
  let up = true;
  let closed = false;
  let downSince = 0;
  let timer: NodeJS.Timeout | undefined;
  let waiters: Array<(up: boolean) => void> = [];

  /** One probe: PostgreSQL answers, and as a primary (a standby takes no INSERT). */
  const probe = async (): Promise<unknown> => {
    try {
      const { rows } = await pool.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
      return rows[0]?.recovery ? Object.assign(new Error('the server is a standby (in recovery)'), { code: '25006' }) : undefined;
    } catch (error) {
      return error;
    }
  };

  const settle = (value: boolean) => {
    const told = waiters;
    waiters = [];
    for (const resolve of told) resolve(value);
  };

  const scheduleProbe = () => {
    timer = setTimeout(async () => {
      timer = undefined;
      if (closed) return;
      const failure = await probe();
      if (closed) return;
      if (failure === undefined) {
        up = true;
        logger.info({ down_ms: Date.now() - downSince }, 'PostgreSQL answers again; writing the messages held meanwhile');
        settle(true);
      } else scheduleProbe();
    }, options.intervalMs);
  };

  const goDown = (error: unknown) => {
    if (!up) return;
    up = false;
    downSince = Date.now();
    const { cause, summary } = databaseFailure(error);
    logger.warn(
      { cause, err: { message: (error as Error)?.message, code: (error as { code?: string })?.code }, probe_interval_ms: options.intervalMs },
      `${summary}; holding the request log's messages until it answers`,
    );
    scheduleProbe();
  };

  return {
    get up() {
      return up;
    },
    get closed() {
      return closed;
    },
    answersAfterFailure: async () => {
      if (closed) return true;
      if (!up) return false;
      const failure = await probe();
      if (failure === undefined) return true;
      goDown(failure);
      return false;
    },
    whenUp: () => {
      if (up || closed) return Promise.resolve(!closed);
      return new Promise<boolean>((resolve) => waiters.push(resolve));
    },
    close: () => {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      settle(false);
    },
  };
}
