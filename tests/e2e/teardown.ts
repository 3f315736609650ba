/** Stopping what an end-to-end test file started, after its tests. */

/** Something a test file starts: a cluster or a process (stopped), a server or a browser (closed). */
export type Started = { stop(): Promise<unknown> } | { close(): Promise<unknown> };

/**
 * Stops what a test file started, one after the other in the order given (a cluster before the
 * upstreams it calls). What was never started (still undefined: an earlier step of beforeAll
 * failed) is passed over.
 */
export async function stopInOrder(...started: Array<Started | undefined>): Promise<void> {
  for (const each of started) {
    if (each === undefined) continue;
    if ('stop' in each) await each.stop();
    else await each.close();
  }
}
