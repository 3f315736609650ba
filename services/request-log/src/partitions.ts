/**
 * The request log's daily partitions: created ahead of the days that need them, dropped whole once
 * past the retention (DROP TABLE, never a DELETE over the table, so retention costs neither a scan
 * nor dead rows). Both under the schema's advisory lock, so replicas never race on the DDL.
 */
import type { Logger } from '@gateway/logger';
import type pg from 'pg';
import { withSchemaLock } from './migrations.js';

/** The partitioned tables: one row per request, the bodies of the requests that keep them, one row per MCP tool call. */
export type PartitionedTable = 'request_log' | 'request_bodies' | 'tool_calls';

/** One day in milliseconds. */
export const DAY_MS = 86_400_000;

/** The UTC day (days since the epoch) of a time in Unix ms. */
export function dayOf(timeMs: number): number {
  return Math.floor(timeMs / DAY_MS);
}

/** The partition of a day: `request_log_p20260131` (`request_bodies_p20260131` for the bodies). */
export function partitionName(day: number, table: PartitionedTable = 'request_log'): string {
  return `${table}_p${new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The day a partition's name holds, or undefined for a table that is not one of the log's partitions. */
export function dayOfPartition(name: string, table: PartitionedTable = 'request_log'): number | undefined {
  const match = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`).exec(name);
  if (!match) return undefined;
  return dayOf(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
}

/** The first day whose rows are kept at `nowMs`: the days before it are past the retention. */
export function firstKeptDay(nowMs: number, retentionDays: number): number {
  // A day is dropped once it is entirely older than the retention: its end at or before now - retention.
  return dayOf(nowMs - retentionDays * DAY_MS);
}

const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The table's partitions that exist now, as days. */
export async function listPartitions(client: pg.Pool | pg.PoolClient, table: PartitionedTable = 'request_log'): Promise<number[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT child.relname AS name FROM pg_inherits
       JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
       JOIN pg_class child ON child.oid = pg_inherits.inhrelid
      WHERE parent.relname = $1`,
    [table],
  );
  return rows
    .map((row) => dayOfPartition(row.name, table))
    .filter((day): day is number => day !== undefined)
    .sort((a, b) => a - b);
}

/**
 * The statistics target of the columns a search bounds and orders by (latency, cost), on each
 * partition (a partition created later does not take the table's, which migration 003 sets):
 * with the default (100), PostgreSQL reckoned a bound that matches almost nothing (`min_latency_ms`
 * of 30 s) to match a thousand rows a day, walked the time index looking for a page and read every
 * row of the range (15 s on ten million rows) where the latency index answers at once.
 */
export const SEARCHED_COLUMNS_STATISTICS = 1_000;

/** Creates the partitions of these days that do not exist yet. */
export async function createPartitions(pool: pg.Pool, days: Iterable<number>, table: PartitionedTable = 'request_log'): Promise<void> {
  const wanted = [...new Set(days)];
  if (wanted.length === 0) return;
  await withSchemaLock(pool, async (client) => {
    for (const day of wanted) {
      const name = partitionName(day, table);
      await client.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${table} FOR VALUES FROM ('${isoDay(day)}') TO ('${isoDay(day + 1)}')`);
      if (table === 'request_log')
        await client.query(
          `ALTER TABLE ${name} ALTER COLUMN latency_ms SET STATISTICS ${SEARCHED_COLUMNS_STATISTICS}, ALTER COLUMN cost_pico_usd SET STATISTICS ${SEARCHED_COLUMNS_STATISTICS}`,
        );
    }
  });
}

/** What one maintenance pass did. */
export interface Maintenance {
  created: number[];
  dropped: number[];
}

/**
 * Creates the partitions from yesterday to `aheadDays` after today and drops those past the
 * retention, as of `nowMs`.
 */
export async function maintainPartitions(
  pool: pg.Pool,
  options: { nowMs: number; retentionDays: number; aheadDays: number; table?: PartitionedTable },
): Promise<Maintenance> {
  const table = options.table ?? 'request_log';
  const today = dayOf(options.nowMs);
  const keepFrom = firstKeptDay(options.nowMs, options.retentionDays);
  const existing = new Set(await listPartitions(pool, table));
  const wanted: number[] = [];
  for (let day = Math.max(today - 1, keepFrom); day <= today + options.aheadDays; day += 1) if (!existing.has(day)) wanted.push(day);
  await createPartitions(pool, wanted, table);
  const expired = [...existing].filter((day) => day < keepFrom);
  if (expired.length > 0)
    await withSchemaLock(pool, async (client) => {
      for (const day of expired) await client.query(`DROP TABLE IF EXISTS ${partitionName(day, table)}`);
    });
  return { created: wanted, dropped: expired };
}

/** One upkeep of every table: the requests, their bodies (at their own, shorter, retention), the tool calls (kept as long as the requests). */
export interface Upkeep extends Maintenance {
  bodies: Maintenance;
  toolCalls: Maintenance;
}

/** The upkeep of the log's tables, run now or every intervalMs until stopped. */
export interface PartitionUpkeep {
  maintain(): Promise<Upkeep>;
  /** Runs maintain every intervalMs (a failure is logged and retried at the next); stop ends it. */
  schedule(): void;
  stop(): void;
}

/** Creates the upkeep of the three partitioned tables. */
export function partitionUpkeep(
  pool: pg.Pool,
  options: { now: () => number; aheadDays: number; retentionDays: number; bodyRetentionDays: number; intervalMs: number; logger: Logger },
): PartitionUpkeep {
  const { logger } = options;
  const upkeep = (table: PartitionedTable, retentionDays: number, label: string) => async (nowMs: number) => {
    const done = await maintainPartitions(pool, { nowMs, aheadDays: options.aheadDays, retentionDays, table });
    if (done.created.length > 0 || done.dropped.length > 0) logger.info(done, `${label} partitions maintained`);
    return done;
  };
  const requests = upkeep('request_log', options.retentionDays, 'request log');
  const bodies = upkeep('request_bodies', options.bodyRetentionDays, 'request bodies');
  const toolCalls = upkeep('tool_calls', options.retentionDays, 'tool calls');
  const maintain = async (): Promise<Upkeep> => {
    const nowMs = options.now();
    const done = await requests(nowMs);
    return { ...done, bodies: await bodies(nowMs), toolCalls: await toolCalls(nowMs) };
  };
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      maintain()
        .catch((error: unknown) => logger.warn({ err: error }, 'request log partition upkeep failed; retrying at the next interval'))
        .finally(() => {
          if (timer) schedule();
        });
    }, options.intervalMs);
    timer.unref();
  };
  return {
    maintain,
    schedule,
    stop: () => {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
