/**
 * How a stream's chunks leave: rendered as the caller's JSON (the edge writes them as they are),
 * and batched, so that chunks the upstream delivered together leave in one message. A batch is
 * sent once the next chunk is not already at hand (it would need another read from the upstream),
 * or once it is full, so that an upstream that is always at hand still meets backpressure. The
 * first event sent carries the stream's `start`.
 */
import { chunkJson, type StreamIdentity } from '@gateway/openai-wire';
import type { ChatChunk, ChatChunkOutput, ExecuteStreamEvent, RenderedChunk, StreamStart, Usage } from '@gateway/proto';
import type { ProviderStreamEvent } from '../providers/provider.js';

/** The most chunks one rendered event carries. */
const MAX_BATCH_CHUNKS = 64;

/** Resolves in the check phase of this loop turn: after whatever the upstream had already delivered. */
const NOT_AT_HAND = Symbol('not at hand');
/** The end of the current loop turn, shared by every stream and chunk of that turn: one timer a turn. */
let loopTurnEnd: Promise<typeof NOT_AT_HAND> | undefined;
function nextLoopTurn(): Promise<typeof NOT_AT_HAND> {
  loopTurnEnd ??= new Promise((resolve) =>
    setImmediate(() => {
      loopTurnEnd = undefined;
      resolve(NOT_AT_HAND);
    }),
  );
  return loopTurnEnd;
}

/** Where a batcher's events go. */
export interface ChunkSink {
  /** Sends one event; resolves when the next may be sent. */
  send(event: ExecuteStreamEvent): Promise<void>;
}

/** What a batcher renders and where it sends it. */
export interface ChunkBatcherOptions {
  /** The id, created and model every rendered chunk carries. */
  readonly identity: StreamIdentity;
  /** Carried by the first event sent (a batch, or else the stream's last event). */
  readonly start: StreamStart;
  readonly sink: ChunkSink;
  /** Checked before each send: a cancelled call sends nothing more. */
  readonly signal: AbortSignal;
}

/** The batches of one stream. */
export class ChunkBatcher {
  /** Whether a batch went out: from then on the caller may have seen output. */
  sent = false;
  /** The completion text of every chunk batched, for the usage of a stream cut short. */
  streamedText = '';
  private chunks: RenderedChunk[] = [];
  private text = '';
  private start: StreamStart | undefined;

  constructor(private readonly options: ChunkBatcherOptions) {
    this.start = options.start;
  }

  /**
   * Relays the upstream's events, `first` first, until its usage event (returned: the answer is
   * whole, and the caller ends the upstream's response) or its end (undefined). The last batch is
   * the caller's to flush. A failure to read flushes what was generated before it, then throws.
   */
  async relay(first: IteratorResult<ProviderStreamEvent>, iterator: AsyncIterator<ProviderStreamEvent>): Promise<Usage | undefined> {
    let next = first;
    while (!next.done) {
      const event = next.value;
      if (event.type === 'usage') return event.usage;
      this.add(event.chunk);
      if (this.chunks.length >= MAX_BATCH_CHUNKS) await this.flush();
      const pending = iterator.next();
      let ready: IteratorResult<ProviderStreamEvent> | typeof NOT_AT_HAND;
      try {
        ready = await Promise.race([pending, nextLoopTurn()]);
      } catch (error) {
        // What was generated before the failure still reaches the caller.
        await this.flush().catch(() => undefined);
        throw error;
      }
      if (ready === NOT_AT_HAND) {
        await this.flush();
        next = await pending;
      } else next = ready;
    }
    return undefined;
  }

  /** Sends the batch, if there is one. */
  async flush(): Promise<void> {
    if (this.chunks.length === 0) return;
    const rendered = { chunks: this.chunks, text: this.text };
    this.chunks = [];
    this.text = '';
    await this.send({ rendered });
    this.sent = true;
  }

  /** The stream's last event, with the start when nothing went before it. */
  last(event: ExecuteStreamEvent): ExecuteStreamEvent {
    return this.start ? { ...event, start: this.start } : event;
  }

  private add(chunk: ChatChunk): void {
    const text = chunkText(chunk);
    this.streamedText += text;
    this.text += text;
    this.chunks.push({
      json: JSON.stringify(chunkJson(chunk as ChatChunkOutput, this.options.identity)),
      finishes: chunk.choices?.some((choice) => choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED') === true,
    });
  }

  private send(event: ExecuteStreamEvent): Promise<void> {
    this.options.signal.throwIfAborted();
    const withStart = this.start ? { ...event, start: this.start } : event;
    this.start = undefined;
    return this.options.sink.send(withStart);
  }
}

/** The completion text of a chunk: thinking, content, refusal, tool-call names and arguments. */
function chunkText(chunk: ChatChunk): string {
  let text = '';
  for (const choice of chunk.choices ?? []) {
    text += choice.delta?.thinking ?? '';
    text += choice.delta?.content ?? '';
    text += choice.delta?.refusal ?? '';
    for (const toolCall of choice.delta?.tool_calls ?? []) text += `${toolCall.function?.name ?? ''}${toolCall.function?.arguments ?? ''}`;
  }
  return text;
}
