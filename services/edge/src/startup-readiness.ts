/**
 * The edge's readiness: its own state, never its dependencies' later one. Ready once it started up
 * (the catalog arrived, and auth, the router and the executors answered once, so that its first
 * requests do not meet channels still connecting) and until it shuts down. After start-up an outage
 * behind it is answered with 503s and Retry-After, never by leaving the Service: a short auth
 * outage would otherwise take every edge out at once.
 */
import { createHealthClient, isServing } from '@gateway/grpc';
import type { ServiceLifecycle } from '@gateway/observability';
import type { CatalogView } from './catalog-view.js';
import type { EdgeConfig } from './config.js';

/** The edge's `ready`: asks the services' grpc.health.v1 at most once a second until they all answered SERVING. */
export function startupReadiness(
  { config, lifecycle }: { readonly config: EdgeConfig; readonly lifecycle: ServiceLifecycle },
  catalog: Pick<CatalogView, 'ready'>,
): () => Promise<boolean> {
  let startup: { at: number; done: boolean } = { at: 0, done: false };
  let health: Array<ReturnType<typeof createHealthClient>> = [config.AUTH_SERVICE_ADDR, config.ROUTER_SERVICE_ADDR, config.EXECUTOR_SERVICE_ADDR].map(
    (address) => createHealthClient(address),
  );
  lifecycle.onStop(() => {
    for (const client of health) client.close();
  });
  return async function ready(): Promise<boolean> {
    if (lifecycle.shuttingDown) return false;
    if (startup.done || Date.now() - startup.at < 1000) return startup.done;
    const answers = await Promise.all(health.map((client) => isServing(client, '', 1000)));
    startup = { at: Date.now(), done: catalog.ready && answers.every(Boolean) };
    if (startup.done) {
      for (const client of health) client.close();
      health = [];
    }
    return startup.done;
  };
}
