/**
 * The changes an operator makes to the cache, whether through the admin API (CacheService's
 * PutSettings, DeleteSettings and Purge) or the CLI (cli.ts): validated, applied to the shared
 * state, logged, and added to auth's audit trail with their actor and what changed.
 */
import { GatewayError } from '@gateway/grpc';
import type { AuditActor, AuditLog } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import type { CacheSettingsOutput, PurgeRequestOutput } from '@gateway/proto';
import { TARGET_PATTERN, validateSettings } from '@gateway/response-cache';
import type { CacheState } from './cache-state.js';

const TEAM_ID = /^team_[A-Za-z0-9]{16}$/;
const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;
const MODEL_ID = /^[A-Za-z0-9._:/@-]{1,128}$/;

/** Who changes, and under which request. */
export interface Change {
  actor: AuditActor;
  requestId?: string;
}

/** What a purge covers: its kind, its target, and the generations it moves. */
export interface Purge {
  kind: 'all' | 'team' | 'key' | 'model';
  target: string;
  names: string[];
}

/** What a purge request covers; throws INVALID_ARGUMENT unless it names exactly one thing, well formed. */
function purgeOf(request: Partial<PurgeRequestOutput>, state: CacheState): Purge {
  const named = [request.team_id, request.key_id, request.model_id].filter(Boolean).length + (request.all ? 1 : 0);
  if (named !== 1) throw GatewayError.of('invalid_request', 'Name exactly one of `team_id`, `key_id`, `model_id` or `all` to purge.', { param: 'team_id' });
  if (request.all) return { kind: 'all', target: 'all', names: ['all'] };
  if (request.team_id) {
    if (!TEAM_ID.test(request.team_id)) throw GatewayError.of('invalid_request', '`team_id` is not a team id (`team_...`).', { param: 'team_id' });
    return { kind: 'team', target: request.team_id, names: state.teamScopes(request.team_id).map((scope) => `scope:${scope}`) };
  }
  if (request.key_id) {
    if (!KEY_ID.test(request.key_id)) throw GatewayError.of('invalid_request', '`key_id` is not a key id (`key_...`).', { param: 'key_id' });
    return { kind: 'key', target: request.key_id, names: [`scope:key:${request.key_id}`] };
  }
  const modelId = request.model_id ?? '';
  if (!MODEL_ID.test(modelId)) throw GatewayError.of('invalid_request', '`model_id` is not a catalog model id.', { param: 'model_id' });
  return { kind: 'model', target: modelId, names: [`model:${modelId}`] };
}

/** The operator's changes. */
export class CacheAdmin {
  constructor(
    private readonly state: CacheState,
    private readonly options: { logger: Logger; audit?: AuditLog; now?: () => number },
  ) {}

  /** A change applied: logged, and added to the audit trail (a failure to write it is logged; the change stays). */
  private async record(change: Change, action: string, target: string, before?: unknown, after?: unknown): Promise<void> {
    const { logger, audit } = this.options;
    logger.info({ target, action, actor: change.actor.subject, request_id: change.requestId }, 'cache changed');
    await audit
      ?.record({ actor: change.actor, action, target_id: target, before, after, request_id: change.requestId ?? '' })
      .catch((error: unknown) => logger.error({ target, action, err: { message: (error as Error).message } }, 'audit entry not written'));
  }

  /** One target's settings; undefined for none (or a target that cannot be). */
  get(target: string): Promise<CacheSettingsOutput | undefined> {
    return TARGET_PATTERN.test(target) ? this.state.get(target) : Promise.resolve(undefined);
  }

  /** Creates or replaces a target's settings; resolves them as stored. */
  async put(input: CacheSettingsOutput | undefined, change: Change): Promise<CacheSettingsOutput> {
    const settings = validateSettings(input, change.actor.subject, (this.options.now ?? Date.now)());
    const before = await this.state.get(settings.target);
    await this.state.put(settings);
    await this.record(change, 'cache.settings.put', settings.target, before, settings);
    return settings;
  }

  /** Removes a target's settings; false when it had none. */
  async delete(target: string, change: Change): Promise<boolean> {
    const before = await this.get(target);
    if (!before || !(await this.state.delete(target))) return false;
    await this.record(change, 'cache.settings.delete', target, before);
    return true;
  }

  /** Moves on the generations a purge covers: its entries are never found again. */
  async purge(request: Partial<PurgeRequestOutput>, change: Change): Promise<Purge> {
    const purge = purgeOf(request, this.state);
    await this.state.purge(purge.names);
    await this.record(change, 'cache.purge', purge.target, undefined, { purged: purge.names });
    return purge;
  }
}
