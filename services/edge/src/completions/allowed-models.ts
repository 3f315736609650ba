/**
 * A key's model allow-lists on the edge's side. Auth refuses a named model outside them in the one
 * key decision (403 model_not_allowed); what is left to the edge is what auth cannot know when it
 * decides: the model `auto` chooses (routed at the same time as the key's check) and the models a
 * fallback chain tries. Both choose only among models every list allows (@gateway/catalog's one
 * matcher, modelAllowed), with no further call: the router's RouteResponse ranks every capable,
 * available candidate, and the edge takes the first allowed one.
 */
import { modelAllowed } from '@gateway/catalog';
import type { CheckKeyResponseOutput, ModelOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { edgeError } from '../error-codes.js';
import type { RequestError } from '../errors.js';
import type { Routing } from './model-resolution.js';

/** The allow-lists of a decision, each its entries; none: every model is allowed. */
export function allowListsOf(decision: Pick<CheckKeyResponseOutput, 'model_allow_lists'> | undefined): string[][] {
  return (decision?.model_allow_lists ?? []).map((list) => list.models ?? []);
}

/** Whether the lists allow a model id (no list: every model). */
export function isAllowed(lists: readonly (readonly string[])[], modelId: string): boolean {
  return lists.length === 0 || modelAllowed(lists, modelId);
}

/** The 400 of a request none of whose capable models the key may use. */
export function noAllowedModel(what = 'None of the models able to serve this request'): RequestError {
  return edgeError(
    'no_allowed_model',
    `${what} is allowed for this API key (or available right now). Name a model the key may use: GET /v1/models lists them.`,
    { param: 'model' },
  );
}

/**
 * The routing of an `auto` request within the key's allow-lists: unchanged when its model is
 * allowed, else the first allowed model of the router's ranking (the chosen model and its
 * fallbacks, from a router that sends no ranking), its own catalog chain its fallbacks. A named
 * model is left as it is: auth has refused it already when a list excludes it.
 */
export function allowedRouting(catalog: EdgeDependencies['catalog'], routing: Routing, lists: readonly (readonly string[])[]): Routing {
  const route = routing.route;
  if (!route || lists.length === 0 || isAllowed(lists, routing.model.id ?? '')) return routing;
  const ranked = route.ranked && route.ranked.length > 0 ? route.ranked : [route.model_id ?? '', ...(route.fallbacks ?? [])];
  const chosenId = ranked.find((id) => id !== '' && isAllowed(lists, id));
  if (chosenId === undefined) throw noAllowedModel();
  // Before the first catalog snapshot, the id alone (as the resolver does for a routed model).
  const chosen = catalog.get(chosenId) ?? ({ id: chosenId, pricing: {}, capabilities: {}, fallbacks: [] } satisfies ModelOutput);
  const fallbacks = (chosen.fallbacks ?? []).filter((id) => catalog.get(id)?.available !== false);
  const reason = `${route.reason ?? ''} ${route.model_id} is not allowed for this key: ${chosen.id}, the best-ranked model it may use.`.trim();
  return { model: chosen, route: { ...route, model_id: chosen.id ?? '', fallbacks, reason } };
}
