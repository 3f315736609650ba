/**
 * The audit trail of admin changes: one Redis stream (`<prefix>audit`), an entry per change that
 * auth (its gRPC services or its CLI) or the guard (its policies) applied, trimmed by age on each write
 * (`XADD ... MINID ~`, AUTH_AUDIT_RETENTION_DAYS) and read newest first (`XREVRANGE`). One key, one
 * command at a time: it works the same on a Redis Cluster. An entry holds public facts only: the
 * before and after JSON go through publicJson, which drops every field that could hold a secret.
 */
import { authKeys, DEFAULT_AUTH_PREFIX, type AuthKeys } from './keys.js';
import type { RedisClient } from '@gateway/redis';

/** Who made a change. */
export interface AuditActor {
  /** `static-token`, an admin token's id, an SSO user's subject, `cli`; `unknown` when the caller did not say. */
  subject: string;
  role: string;
  via: string;
}

/** The actor of a call that named none. */
export const UNKNOWN_ACTOR: AuditActor = Object.freeze({ subject: 'unknown', role: 'unknown', via: 'unknown' });
/** The actor of auth's CLI. */
export const CLI_ACTOR: AuditActor = Object.freeze({ subject: 'cli', role: 'admin', via: 'cli' });

/** A change to record. */
export interface AuditRecord {
  actor: AuditActor;
  /** `<thing>.<verb>`: `key.create`, `key.update`, `key.revoke`, `admin_token.create`, ... */
  action: string;
  target_id: string;
  /** The public facts before the change; undefined for a creation. */
  before?: unknown;
  /** The public facts after the change. */
  after?: unknown;
  request_id?: string;
}

/** A recorded change, as read back. */
export interface AuditEntry {
  /** The stream entry id, `<ms>-<seq>`. */
  id: string;
  at_ms: number;
  actor: AuditActor;
  action: string;
  target_id: string;
  /** JSON; '' for none. */
  before_json: string;
  /** JSON; '' for none. */
  after_json: string;
  request_id: string;
}

/** Which entries to read. */
export interface AuditQuery {
  /** 1 to 200; default 50. */
  limit?: number;
  /** The next_cursor of the previous page; '' or undefined: the newest. */
  cursor?: string;
  target_id?: string;
  actor_subject?: string;
}

/** A page of entries, newest first. */
export interface AuditPage {
  entries: AuditEntry[];
  /** '' when there is no next page. */
  next_cursor: string;
}

/** Thrown for a cursor that is not one this log gave out. */
export class AuditCursorError extends Error {
  constructor() {
    super('cursor must be the next_cursor of a previous page.');
    this.name = 'AuditCursorError';
  }
}

/** Field names never written to the trail, whatever object they are in: secrets and their hashes. */
const SECRET_FIELD = /secret|hash|api_key|password|token_value|credential/i;

/** JSON of `value` without any field whose name could hold a secret, at any depth; '' for undefined. */
export function publicJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, (name, field) => (name !== '' && SECRET_FIELD.test(name) ? undefined : field));
}

const DAY_MS = 86_400_000;
/** Entries read per XREVRANGE, and at most per call when a filter skips entries. */
const BATCH = 200;
const MAX_SCANNED = 2_000;
const CURSOR_PATTERN = /^[0-9]{1,20}-[0-9]{1,20}$/;

/** Where the log lives and how long it keeps entries. */
export interface AuditLogOptions {
  prefix?: string;
  /** Entries older than this are trimmed on the next write and never read. Default 90. */
  retentionDays?: number;
  /**
   * False: this writer never trims (a service that adds to the trail auth keeps, without knowing
   * auth's retention); its entries are trimmed by auth's next write. Default true.
   */
  trims?: boolean;
  now?: () => number;
}

/** The audit trail; the gRPC services and the CLI share it. */
export class AuditLog {
  private readonly names: AuthKeys;
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly trims: boolean;

  constructor(
    private readonly redis: RedisClient,
    options: AuditLogOptions = {},
  ) {
    this.names = authKeys(options.prefix ?? DEFAULT_AUTH_PREFIX);
    this.retentionMs = (options.retentionDays ?? 90) * DAY_MS;
    this.now = options.now ?? Date.now;
    this.trims = options.trims ?? true;
  }

  /** The oldest entry id kept. */
  private minId(): string {
    return `${Math.max(0, this.now() - this.retentionMs)}-0`;
  }

  /** Records a change; resolves with the entry's id. */
  async record(change: AuditRecord): Promise<string> {
    const fields = [
      'actor_subject',
      change.actor.subject,
      'actor_role',
      change.actor.role,
      'actor_via',
      change.actor.via,
      'action',
      change.action,
      'target_id',
      change.target_id,
      'before',
      publicJson(change.before),
      'after',
      publicJson(change.after),
      'request_id',
      change.request_id ?? '',
    ];
    const id = this.trims
      ? await this.redis.xadd(this.names.audit, 'MINID', '~', this.minId(), '*', ...fields)
      : await this.redis.xadd(this.names.audit, '*', ...fields);
    return id ?? '';
  }

  /** A page of entries, newest first, matching the query's filters. */
  async list(query: AuditQuery = {}): Promise<AuditPage> {
    const limit = Math.min(200, Math.max(1, query.limit || 50));
    if (query.cursor && !CURSOR_PATTERN.test(query.cursor)) throw new AuditCursorError();
    const matches = (entry: AuditEntry) =>
      (!query.target_id || entry.target_id === query.target_id) && (!query.actor_subject || entry.actor.subject === query.actor_subject);
    const entries: AuditEntry[] = [];
    let end = query.cursor ? `(${query.cursor}` : '+';
    for (let scanned = 0; scanned < MAX_SCANNED; ) {
      const batch = (await this.redis.xrevrange(this.names.audit, end, this.minId(), 'COUNT', BATCH)).map(parseEntry);
      for (const entry of batch) {
        if (!matches(entry)) continue;
        // One more match than the page holds: there is a next page, after the page's last entry.
        if (entries.length === limit) return { entries, next_cursor: entries.at(-1)!.id };
        entries.push(entry);
      }
      if (batch.length < BATCH) return { entries, next_cursor: '' };
      scanned += batch.length;
      end = `(${batch.at(-1)!.id}`;
    }
    return { entries, next_cursor: end.slice(1) };
  }
}

/** A stream entry as read by XREVRANGE. */
function parseEntry([id, flat]: [string, string[]]): AuditEntry {
  const fields = new Map<string, string>();
  for (let index = 0; index + 1 < flat.length; index += 2) fields.set(flat[index]!, flat[index + 1]!);
  const field = (name: string) => fields.get(name) ?? '';
  return {
    id,
    at_ms: Number(id.split('-')[0]),
    actor: { subject: field('actor_subject'), role: field('actor_role'), via: field('actor_via') },
    action: field('action'),
    target_id: field('target_id'),
    before_json: field('before'),
    after_json: field('after'),
    request_id: field('request_id'),
  };
}
