/**
 * A request's bodies as the log keeps them (table request_bodies): written from the bodies stream
 * as the edge sent them (capped and redacted there), read back with the request's detail for a
 * caller allowed to see them.
 */
import { PoisonMessageError } from '@gateway/messaging';
import type { RequestBodies, RequestBodiesOutput } from '@gateway/proto';
import type pg from 'pg';

/** One row of request_bodies. */
export interface BodiesRow {
  received_at: Date;
  event_id: string;
  key_id: string;
  request_body: string;
  response_body: string;
  request_truncated_bytes: number;
  response_truncated_bytes: number;
}

/** The columns of a bodies row, in the order an INSERT lists them. */
export const BODIES_COLUMNS = [
  'received_at',
  'event_id',
  'key_id',
  'request_body',
  'response_body',
  'request_truncated_bytes',
  'response_truncated_bytes',
] as const satisfies readonly (keyof BodiesRow)[];

/** The row of a RequestBodies message; throws a PoisonMessageError for one the log can never hold. */
export function bodiesRow(bodies: RequestBodiesOutput): BodiesRow {
  if (!bodies.event_id) throw new PoisonMessageError('missing_event_id', 'request bodies without event_id');
  const receivedAtMs = Number(bodies.received_at_ms ?? 0);
  if (!(receivedAtMs > 0)) throw new PoisonMessageError('missing_received_at', `request bodies ${bodies.event_id} without received_at_ms`);
  return {
    received_at: new Date(receivedAtMs),
    event_id: bodies.event_id,
    key_id: bodies.key_id ?? '',
    request_body: bodies.request ?? '',
    response_body: bodies.response ?? '',
    request_truncated_bytes: Number(bodies.request_truncated_bytes ?? 0),
    response_truncated_bytes: Number(bodies.response_truncated_bytes ?? 0),
  };
}

/** The bodies of the request with this event id and time; undefined when none are kept (never logged, or past their retention). */
export async function getBodies(pool: pg.Pool, eventId: string, receivedAtMs: number): Promise<RequestBodies | undefined> {
  const { rows } = await pool.query<BodiesRow>('SELECT * FROM request_bodies WHERE event_id = $1 AND received_at = $2', [eventId, new Date(receivedAtMs)]);
  const row = rows[0];
  if (!row) return undefined;
  return {
    event_id: row.event_id,
    received_at_ms: row.received_at.getTime(),
    key_id: row.key_id,
    request: row.request_body,
    response: row.response_body,
    request_truncated_bytes: Number(row.request_truncated_bytes),
    response_truncated_bytes: Number(row.response_truncated_bytes),
  };
}
