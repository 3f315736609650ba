/** The audit trail (GET /admin/v1/audit): its query, an entry and a page. */
import { type Static, Type } from '@sinclair/typebox';
import { adminObject, type List, Nullable, queryNames, queryParameter, steps } from './common.js';

/** The query of GET /admin/v1/audit. */
export const AuditQuerySchema = steps(
  queryNames(['limit', 'cursor', 'target_id', 'actor']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,2}|[01][0-9]{2}|200)$', "'limit' must be an integer from 1 to 200.")),
    cursor: Type.Optional(queryParameter('cursor', '^[0-9]{1,20}-[0-9]{1,20}$', "'cursor' must be the next_cursor of a previous page.")),
    target_id: Type.Optional(queryParameter('target_id', '^[A-Za-z0-9_-]{1,64}$', "'target_id' must be an id (a key's or an admin token's).")),
    actor: Type.Optional(queryParameter('actor', '^.{1,512}$', "'actor' must be an actor's subject, at most 512 characters.")),
  }),
);
export type AuditQuery = Static<typeof AuditQuerySchema>;

/** One admin change (GET /admin/v1/audit). */
export const AuditEntrySchema = adminObject('audit_entry', {
  /** Unix milliseconds when the change applied. */
  created_at_ms: Type.Integer(),
  actor: Type.Object({ subject: Type.String(), role: Type.String(), via: Type.String() }),
  /** `key.create`, `key.update`, `key.revoke`, `admin_token.create`, `admin_token.revoke`, `team.create`, `team.update`, `team.delete` */
  action: Type.String(),
  target_id: Type.String(),
  /** The public facts (auth's KeyInfo or AdminTokenInfo) before the change; null for a creation. */
  before: Type.Unknown(),
  /** The public facts after the change. */
  after: Type.Unknown(),
  request_id: Nullable(Type.String()),
});
export type AuditEntry = Static<typeof AuditEntrySchema>;

/** GET /admin/v1/audit: newest first; `next_cursor` is the `cursor` of the next page. */
export interface AuditPage extends List<AuditEntry> {
  has_more: boolean;
  next_cursor: string | null;
}
