import { describe, expect, it, vi } from 'vitest';
import { callUnary, StreamedCalls } from '@gateway/grpc';
import type { ChatRequestOutput, ExecuteResponseOutput } from '@gateway/proto';
import { eventually, simulatedModel } from '@gateway/testing';
import type { Provider, ProviderContext, ProviderStreamEvent } from './providers/provider.js';
import { useExecutorOfProvider } from './testing/executor-calls.js';

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

const start = useExecutorOfProvider([simulatedModel()]);

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe('StreamComplete flow control', () => {
  it('stops pulling from the upstream while the caller does not read, and releases it when the caller leaves', async () => {
    const provider = new EndlessProvider();
    const executor = await start(provider);
    const call = executor.StreamComplete(
      { model_id: 'sim-fast', request: { messages: [{ role: 'ROLE_USER', text: 'go' }] } },
      { deadline: Date.now() + 10_000 },
    );
    call.on('error', () => {
      /* CANCELLED at the end, expected */
    });
    await new Promise<void>((resolve) =>
      call.once('data', () => {
        call.pause();
        resolve();
      }),
    );
    // Without backpressure an endless upstream would be pulled without bound (hundreds of
    // thousands of chunks a second); with it, pulling stops once the transport's window is full:
    // wait until it stands still (however loaded the machine), then see that it stays still.
    let pulledWhilePaused = -1;
    for (let waited = 0; waited < 10_000 && provider.pulled !== pulledWhilePaused; waited += 200) {
      pulledWhilePaused = provider.pulled;
      await sleep(200);
    }
    await sleep(300);
    expect(provider.pulled).toBe(pulledWhilePaused);
    expect(pulledWhilePaused).toBeLessThan(20_000);
    call.resume();
    // However loaded the machine: pulling starts again once the caller reads, and the upstream is
    // aborted and released once it leaves (waited for, at most 5 s each).
    await vi.waitFor(() => expect(provider.pulled).toBeGreaterThan(pulledWhilePaused), { timeout: 5_000, interval: 20 });
    call.cancel();
    await vi.waitFor(
      () => {
        expect(provider.signal?.aborted).toBe(true);
        expect(provider.released).toBe(true);
      },
      { timeout: 5_000, interval: 20 },
    );
  });
});

/** A provider of our own whose complete answers at once, or (hang) waits until its signal aborts. */
class WaitingProvider implements Provider {
  readonly name = 'waiting';
  signal?: AbortSignal;
  constructor(private readonly hang: boolean) {}

  async complete(_request: ChatRequestOutput, context: ProviderContext) {
    this.signal = context.signal;
    if (this.hang) await new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true }));
    return {
      id: 'chatcmpl-waiting',
      created: 1,
      model: context.model.id,
      choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'FINISH_REASON_STOP' as const }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    };
  }

  // biome-ignore lint/correctness/useYield: a provider whose stream this test never reads
  async *stream(): AsyncGenerator<ProviderStreamEvent> {
    throw new Error('not used');
  }
}

describe('CompleteCalls', () => {
  const request = { request_id: 'req-calls', model_id: 'sim-fast', request: { model: 'sim-fast', messages: [{ role: 'ROLE_USER' as const, text: 'hi' }] } };

  /** An executor serving the provider, and one open CompleteCalls stream to it. */
  async function calls(provider: Provider) {
    const executor = await start(provider);
    const streamed = new StreamedCalls<{ complete: [typeof request, ExecuteResponseOutput] }>({
      open: () => executor.CompleteCalls(),
      streams: 1,
      cancellable: true,
      unary: { complete: () => Promise.reject(new Error('the CompleteCalls stream is not open')) },
    });
    await eventually(() => streamed.openStreams === 1, 'the stream to open');
    return { executor, streamed };
  }

  it('answers a call on the stream with what Complete answers', async () => {
    const { executor, streamed } = await calls(new WaitingProvider(false));
    const [onStream, unaryAnswer] = await Promise.all([
      streamed.call('complete', request, { deadlineMs: 5_000 }),
      callUnary<typeof request, ExecuteResponseOutput>(executor, executor.Complete, request, { deadlineMs: 5_000 }),
    ]);
    expect(onStream).toEqual(unaryAnswer);
    expect(onStream.response?.choices[0]?.message?.content).toBe('done');
    await streamed.close(100);
  });

  it('aborts the upstream call when the caller gives up on it, long before its deadline, and keeps the stream', async () => {
    const provider = new WaitingProvider(true);
    const { streamed } = await calls(provider);
    const abort = new AbortController();
    const pending = streamed.call('complete', request, { deadlineMs: 5_000, signal: abort.signal });
    await eventually(() => provider.signal, 'the upstream call to start');
    abort.abort();
    await expect(pending).rejects.toMatchObject({ code: 1 });
    // Within 1 s of a call whose deadline is 5 s away: the caller's cancel reached it (how fast is
    // not a target a shared machine can check).
    await eventually(() => provider.signal?.aborted, 'the upstream call to be aborted', 1_000, 5);
    // Its deadline passing cancels a call the same way.
    provider.signal = undefined;
    await expect(streamed.call('complete', request, { deadlineMs: 200 })).rejects.toMatchObject({ code: 4 });
    await eventually(() => provider.signal?.aborted, 'the upstream call past its deadline to be aborted', 1_000, 5);
    expect(streamed.openStreams).toBe(1);
    await streamed.close(100);
  });

  it('aborts the calls a stream carried when the stream goes away', async () => {
    const provider = new WaitingProvider(true);
    const { streamed } = await calls(provider);
    const pending = streamed.call('complete', request, { deadlineMs: 5_000 }).catch((error: unknown) => error);
    await eventually(() => provider.signal, 'the upstream call to start');
    // Closing waits 50 ms for the call's answer, then cancels the stream.
    await streamed.close(50);
    await eventually(() => provider.signal?.aborted, 'the upstream call to be aborted', 2_000, 5);
    expect(await pending).toMatchObject({ code: 14 });
  });
});
