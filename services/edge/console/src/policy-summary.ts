/** Short descriptions of a guardrail policy for the Policies page's table. */
import type { PolicyJson } from './admin-api';

/** What the policy applies to. */
export function attachmentOf(policy: PolicyJson): string {
  const { attachment } = policy;
  if (attachment.all_requests) return 'all requests';
  const parts = [
    attachment.key_ids.length > 0 ? `keys ${attachment.key_ids.join(', ')}` : '',
    attachment.team_ids.length > 0 ? `teams ${attachment.team_ids.join(', ')}` : '',
    attachment.models.length > 0 ? `models ${attachment.models.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join('; ') : 'nothing';
}

/** Which kind of check it is. */
export function kindOf(check: PolicyJson['checks'][number]): string {
  return (['secrets', 'pii', 'patterns', 'limits', 'external'] as const).find((kind) => check[kind] !== undefined) ?? '?';
}
