/** Steady whole chat completions against a cluster, for the drills that break something under load. */
import type { Cluster } from './cluster.js';

/** What the clients of a chat load got. */
export interface ChatLoadResult<A> {
  /** The body of every answer with status 200, in the order they came. */
  answers: A[];
  /** How many answers came with each status. */
  statuses: Map<number, number>;
}

/** Clients sending one chat completion after another until stopped. */
export interface ChatLoad<A> {
  /** Lets each client finish the request it is on, then resolves with what they got (rejects with a client's error). */
  stop(): Promise<ChatLoadResult<A>>;
}

/**
 * Starts `clients` concurrent clients, each asking `sim-mini` the chat completion of `content` with
 * the cluster's key, and asking again once answered; a request not answered within `timeoutMs`
 * ends its client with the error.
 */
export function startChatLoad<A>(cluster: Pick<Cluster, 'baseUrl' | 'apiKey'>, options: { clients: number; content: string; timeoutMs: number }): ChatLoad<A> {
  const answers: A[] = [];
  const statuses = new Map<number, number>();
  let stopping = false;
  const client = async () => {
    while (!stopping) {
      const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: options.content }] }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) answers.push((await response.json()) as A);
      else await response.arrayBuffer();
    }
  };
  const running = Array.from({ length: options.clients }, client);
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(running);
      return { answers, statuses };
    },
  };
}
