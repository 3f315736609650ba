import type { CheckKeyResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../errors.js';
import type { ParsedChatRequest } from './parsed-request.js';
import { allowListsOf, isAllowed } from './allowed-models.js';
import { capabilityProblem, type Routing } from './model-resolution.js';

/** What the chain of a request depends on (a Completion is one). */
export interface ChainQuery {
  parsed: ParsedChatRequest;
  routing: Routing;
  promptTokens: number;
  /** The key's decision: its model allow-lists, when it has any. */
  decision?: Pick<CheckKeyResponseOutput, 'model_allow_lists'>;
}

/**
 * The models to try after the primary: the caller's list, or with `fallbacks: true` (or no
 * `fallbacks` from a key whose plan or override turns chains on) the catalog's chain of the model
 * (for `auto`, the router's capable alternatives). Listed ids must exist and be
 * able to serve the request; chain members that cannot are skipped. Models outside the key's
 * allow-lists are skipped, whoever listed them.
 */
export function fallbackChain(catalog: EdgeDependencies['catalog'], query: ChainQuery, keyDefault: boolean): string[] {
  const { parsed, routing, promptTokens } = query;
  const primary = routing.model.id ?? '';
  const lists = allowListsOf(query.decision);
  // Silence means the key's (or its plan's) default: the catalog's chain, or none.
  const requested = parsed.fallbacks ?? keyDefault;
  if (Array.isArray(requested)) {
    const chain: string[] = [];
    requested.forEach((id, index) => {
      // Skipped before anything else: the key learns nothing of a model it may not use.
      if (!isAllowed(lists, id)) return;
      if (catalog.ready) {
        const model = catalog.get(id);
        if (!model)
          throw new RequestError(404, `The model \`${id.slice(0, 256)}\` in 'fallbacks' does not exist or you do not have access to it.`, {
            param: `fallbacks[${index}]`,
            code: 'model_not_found',
          });
        const problem = capabilityProblem(model, parsed, promptTokens);
        if (problem) throw new RequestError(400, `'fallbacks[${index}]': ${problem.message}`, { param: `fallbacks[${index}]`, code: problem.code });
      }
      if (id !== primary && !chain.includes(id)) chain.push(id);
    });
    return chain;
  }
  if (requested !== true) return [];
  const candidates = routing.route ? routing.route.fallbacks : routing.model.fallbacks;
  return candidates.filter((id) => {
    if (id === primary || !isAllowed(lists, id)) return false;
    const model = catalog.get(id);
    return model !== undefined && capabilityProblem(model, parsed, promptTokens) === undefined;
  });
}
