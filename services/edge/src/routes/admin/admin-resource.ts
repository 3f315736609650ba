/**
 * The reading and removing routes of one admin API resource (keys, teams, admin tokens, MCP
 * servers): GET on the collection lists its items as `{ object: 'list', data }`, GET on an item
 * (`<path>/:id` or `<path>/:name`) reads one, DELETE on an item removes it (a revocation answers
 * with the item as it now is, a deletion with a `<object>.deleted` record). Each is one RPC of the
 * service that keeps the resource, made with the options of a call on behalf of the request.
 */
import type { FastifyInstance, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { CallOptions } from '@gateway/grpc';
import type { List } from './admin-api-schemas.js';
import type { AdminCallOptions } from './admin-scope.js';

/** What differs between the resources: their path, how an item is named, and the RPCs that serve them. */
export interface AdminResource<Item, Json, Query = unknown> {
  /** The collection's path, e.g. /admin/v1/teams. */
  readonly path: string;
  /** The path parameter that names an item. */
  readonly param: 'id' | 'name';
  /** An item as the admin API's JSON. */
  readonly json: (item: Item) => Json;
  /** The route options of the listing (a query string's schema, a stricter role). */
  readonly listOptions?: RouteShorthandOptions;
  readonly list: (request: FastifyRequest<{ Querystring: Query }>, call: CallOptions) => Promise<readonly Item[]>;
  /** Reads one item; without it, there is no GET on an item. */
  readonly get?: (key: string, call: CallOptions) => Promise<Item>;
  /** Removes one item, answering the DELETE's body. */
  readonly remove: (key: string, call: CallOptions) => Promise<unknown>;
}

/** Registers the list, get and delete routes of a resource in the admin scope. */
export function registerAdminResource<Item, Json, Query = unknown>(
  admin: FastifyInstance,
  options: AdminCallOptions,
  resource: AdminResource<Item, Json, Query>,
): void {
  const { path, param, json, get } = resource;
  const itemPath = `${path}/:${param}`;
  admin.get<{ Querystring: Query }>(path, resource.listOptions ?? {}, async (request): Promise<List<Json>> => {
    const items = await resource.list(request, options(request));
    return { object: 'list', data: items.map((item) => json(item)) };
  });
  if (get) {
    admin.get<{ Params: Record<string, string> }>(itemPath, async (request) => json(await get(request.params[param]!, options(request))));
  }
  admin.delete<{ Params: Record<string, string> }>(itemPath, async (request) => resource.remove(request.params[param]!, options(request)));
}
