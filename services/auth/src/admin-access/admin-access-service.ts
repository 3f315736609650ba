/**
 * The AdminAccessService (proto/gateway/auth/v1/admin_access.proto): admin tokens, created,
 * listed, checked and revoked through the AdminTokenStore, and the audit trail read back. Token
 * creation and revocation are audited changes (auditor.ts).
 */
import { GatewayError, storeCalls, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type {
  AdminAccessServiceHandlers,
  AdminTokenInfo,
  AuditEntry as AuditEntryMessage,
  CheckAdminTokenRequestOutput,
  CheckAdminTokenResponse,
  CreateAdminTokenRequestOutput,
  CreateAdminTokenResponse,
  ListAdminTokensResponse,
  ListAuditEntriesRequestOutput,
  ListAuditEntriesResponse,
  RecordToolCallRequestOutput,
  RecordToolCallResponse,
  RevokeAdminTokenRequestOutput,
} from '@gateway/proto';
import { AuditCursorError, type AuditEntry, type AuditLog } from '@gateway/keyspace';
import { type Auditor, callActor } from '../audit/auditor.js';
import { invalidInput } from '../shared/handler-input.js';
import { KEY_ID_PATTERN } from '../shared/ids.js';
import type { AdminRoleName } from './admin-roles.js';
import { ADMIN_ROLES, toAdminTokenInfo } from './admin-token-message.js';
import type { AdminTokenStore } from './admin-token-store.js';

/** What the AdminAccessService needs. */
export interface AdminAccessDependencies {
  adminTokens: AdminTokenStore;
  audit: AuditLog;
  auditor: Auditor;
  logger: Logger;
}

const ROLE_NAMES: Record<string, AdminRoleName> = { ADMIN_ROLE_ADMIN: 'admin', ADMIN_ROLE_VIEWER: 'viewer' };

function toAuditEntryMessage(entry: AuditEntry): AuditEntryMessage {
  return { ...entry };
}

/** A store's refusal (a bad value, an unreadable audit cursor) as the caller's invalid_request. */
function refusal(error: unknown): GatewayError | undefined {
  if (error instanceof AuditCursorError) return GatewayError.of('invalid_request', error.message, { param: 'cursor' });
  return invalidInput(error);
}

/** The AdminAccessService's handlers. */
export function createAdminAccessService({ adminTokens, audit, auditor, logger }: AdminAccessDependencies): AdminAccessServiceHandlers {
  const store = storeCalls(logger, { name: 'admin token store', reason: 'auth_unavailable', message: 'The admin token store is unavailable.', refusal });
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'admin access handler failed');
  const notFound = () => GatewayError.of('admin_token_not_found', 'No admin token has this id.', { param: 'token_id' });

  async function createAdminToken(request: CreateAdminTokenRequestOutput, call: Parameters<typeof callActor>[0]): Promise<CreateAdminTokenResponse> {
    const role = ROLE_NAMES[request.role ?? ''];
    if (!role) throw GatewayError.of('invalid_request', 'A role is required: ADMIN_ROLE_ADMIN or ADMIN_ROLE_VIEWER.', { param: 'role' });
    const created = await store(() => adminTokens.create({ role, name: request.name ?? '', createdBy: callActor(call).subject }));
    logger.info({ token_id: created.token.token_id, role }, 'admin token created');
    return { token: toAdminTokenInfo(created.token), secret: created.secret };
  }

  async function revokeAdminToken(request: RevokeAdminTokenRequestOutput): Promise<AdminTokenInfo> {
    const revoked = await store(() => adminTokens.revoke(request.token_id ?? ''));
    if (!revoked) throw notFound();
    logger.info({ token_id: revoked.token_id }, 'admin token revoked');
    return toAdminTokenInfo(revoked);
  }

  async function tokenBefore(request: RevokeAdminTokenRequestOutput): Promise<AdminTokenInfo | undefined> {
    const token = await store(() => adminTokens.get(request.token_id ?? ''));
    return token && toAdminTokenInfo(token);
  }

  async function checkAdminToken(request: CheckAdminTokenRequestOutput): Promise<CheckAdminTokenResponse> {
    const token = await store(() => adminTokens.check(request.secret ?? ''));
    return token ? { valid: true, token_id: token.token_id, role: ADMIN_ROLES[token.role] } : { valid: false };
  }

  async function listAdminTokens(): Promise<ListAdminTokensResponse> {
    return { tokens: (await store(() => adminTokens.list())).map(toAdminTokenInfo) };
  }

  async function listAuditEntries(request: ListAuditEntriesRequestOutput): Promise<ListAuditEntriesResponse> {
    const limit = request.limit ?? 0;
    if (!Number.isInteger(limit) || limit < 0 || limit > 200)
      throw GatewayError.of('invalid_request', 'limit must be from 1 to 200 (0: 50).', { param: 'limit' });
    const page = await store(() =>
      audit.list({ limit, cursor: request.cursor ?? '', target_id: request.target_id ?? '', actor_subject: request.actor_subject ?? '' }),
    );
    return { entries: page.entries.map(toAuditEntryMessage), next_cursor: page.next_cursor };
  }

  /** One tool call of the MCP gateway: who (the key) called which tool on which server, never what with. */
  async function recordToolCall(request: RecordToolCallRequestOutput): Promise<RecordToolCallResponse> {
    const keyId = request.key_id ?? '';
    if (!KEY_ID_PATTERN.test(keyId)) throw GatewayError.of('invalid_request', 'key_id must be a key id.', { param: 'key_id' });
    const server = (request.server ?? '').slice(0, 64);
    const tool = (request.tool ?? '').slice(0, 200);
    const entryId = await store(() =>
      audit.record({
        actor: { subject: keyId, role: 'api_key', via: 'mcp' },
        action: 'mcp.tool_call',
        target_id: server ? `${server}__${tool}` : 'unknown',
        after: {
          server,
          tool,
          ...(request.team_id ? { team_id: request.team_id } : {}),
          failed: request.failed === true,
          ...(request.error_code ? { error_code: request.error_code.slice(0, 64) } : {}),
          latency_ms: request.latency_ms ?? 0,
        },
        request_id: (request.request_id ?? '').slice(0, 128),
      }),
    );
    return { entry_id: entryId };
  }

  return {
    RecordToolCall: unary(recordToolCall, 'RecordToolCall', report),
    CreateAdminToken: unary(
      auditor.audited(createAdminToken, {
        action: 'admin_token.create',
        target: (_, created) => created.token?.token_id ?? '',
        after: (created) => created.token,
      }),
      'CreateAdminToken',
      report,
    ),
    ListAdminTokens: unary(listAdminTokens, 'ListAdminTokens', report),
    RevokeAdminToken: unary(
      auditor.audited(revokeAdminToken, {
        action: 'admin_token.revoke',
        target: (request) => request.token_id ?? '',
        before: tokenBefore,
        after: (token) => token,
      }),
      'RevokeAdminToken',
      report,
    ),
    CheckAdminToken: unary(checkAdminToken, 'CheckAdminToken', report),
    ListAuditEntries: unary(listAuditEntries, 'ListAuditEntries', report),
  };
}
