import { afterEach, describe, expect, it } from 'vitest';
import { createClient, createGatewayServer, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { loadGatewayGrpc, type ChatRequestOutput, type ExecutorServiceClient } from '@gateway/proto';
import { DEFAULT_BREAKER, DEFAULT_RETRY, EXECUTOR_SERVICE_NAME } from './app.js';
import { createExecutorMetrics } from './executor-metrics.js';
import { createExecutorHandlers } from './executor-service.js';
import { DeploymentPool } from './pool/deployment-pool.js';
import type { Provider, ProviderContext, ProviderStreamEvent } from './providers/provider.js';
import { simulatedModel } from './testing/catalog-models.js';

/** A provider of our own that never ends and counts how far the executor pulled it. */
class EndlessProvider implements Provider {
  readonly name = 'endless';
  pulled = 0;
  released = false;
  signal?: AbortSignal;

  complete(): never {
    throw new Error('not used');
  }

  async *stream(_request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    this.signal = context.signal;
    try {
      for (;;) {
        context.signal.throwIfAborted();
        this.pulled += 1;
        yield { type: 'chunk', chunk: { id: 'chatcmpl-endless', created: 1, model: 'sim-fast', choices: [{ index: 0, delta: { content: 'x'.repeat(200) } }] } };
        if (this.pulled % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.released = true;
    }
  }
}

let server: GatewayServer | undefined;
let client: ExecutorServiceClient | undefined;

afterEach(async () => {
  client?.close();
  await server?.shutdown(100);
});

async function start(provider: Provider): Promise<ExecutorServiceClient> {
  const handlers = createExecutorHandlers({
    pool: new DeploymentPool([simulatedModel()], {}, DEFAULT_BREAKER),
    providers: { forModel: () => provider },
    retry: DEFAULT_RETRY,
    logger: createLogger('executor-test', 'silent'),
    metrics: createExecutorMetrics(new prometheus.Registry()),
  });
  server = createGatewayServer([{ name: EXECUTOR_SERVICE_NAME, definition: loadGatewayGrpc().gateway.executor.v1.ExecutorService.service, handlers }]);
  const port = await server.listen('127.0.0.1:0');
  client = createClient(loadGatewayGrpc().gateway.executor.v1.ExecutorService, `127.0.0.1:${port}`);
  return client;
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe('StreamComplete flow control', () => {
  it('stops pulling from the upstream while the caller does not read, and releases it when the caller leaves', async () => {
    const provider = new EndlessProvider();
    const executor = await start(provider);
    const call = executor.StreamComplete({ model_id: 'sim-fast', request: { messages: [{ role: 'ROLE_USER', text: 'go' }] } }, { deadline: Date.now() + 10_000 });
    call.on('error', () => { /* CANCELLED at the end, expected */ });
    await new Promise<void>((resolve) => call.once('data', () => { call.pause(); resolve(); }));
    await sleep(300);
    const pulledWhilePaused = provider.pulled;
    await sleep(300);
    // Without backpressure an endless upstream would be pulled without bound (hundreds of
    // thousands of chunks in 600 ms); with it, pulling stops once the transport's window is full.
    expect(provider.pulled).toBe(pulledWhilePaused);
    expect(pulledWhilePaused).toBeLessThan(20_000);
    call.resume();
    await sleep(100);
    expect(provider.pulled).toBeGreaterThan(pulledWhilePaused);
    call.cancel();
    await sleep(100);
    expect(provider.signal?.aborted).toBe(true);
    expect(provider.released).toBe(true);
  });
});
