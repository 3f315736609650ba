/**
 * The batch lane of one replica: a loop that claims the lines of running batches (at most
 * `concurrency` running at once here), sends each to the edge's API with the batch owner's key (as
 * a bearer token, which the edge's /v1/messages takes as it takes `x-api-key`; a /v1/messages line
 * with Anthropic's `anthropic-version` too), writes its answer (whatever its HTTP status) or, when
 * the edge could not be reached after the last attempt, its failure; sends a line again later on a
 * 429, 502, 503, 504 or a connection failure; keeps the leases of its lines; and finalizes the
 * batches that are ready. It polls every
 * `pollIntervalMs` while idle and at once when woken (a batch created here, a line ended). On
 * stop it claims nothing more, lets the lines in flight finish within the grace, and hands the
 * others back to the queue.
 */
import type { Logger } from '@gateway/logger';
import type { SecretCipher } from '@gateway/redis';
import type pg from 'pg';
import { type LineAnswer, retryableStatus, retryDelayMs, sentBody } from './batch-lines.js';
import { describeError, type DatabaseWatch } from './database.js';
import { finalizeReady } from './finalize.js';
import { type ClaimedLine, claimLines, finishLine, releaseLines, renewLeases, requeueLine } from './lane-store.js';
import { MESSAGES_URL } from './message-batch-lines.js';

/** The `anthropic-version` a line of Anthropic's Messages API is sent with, as Anthropic's SDK sends it. */
const ANTHROPIC_VERSION = '2023-06-01';

/** What the lane counts. */
export interface LaneCounters {
  /** A line ended: answered (any status) or failed (no answer); or it is sent again (retried). */
  line(result: 'answered' | 'failed' | 'retried'): void;
}

/** The lane's settings and what it works with. */
export interface LaneOptions {
  pool: pg.Pool;
  cipher: SecretCipher;
  logger: Logger;
  watch: DatabaseWatch;
  counters: LaneCounters;
  /** This replica's name on the lines it holds. */
  replica: string;
  /** BATCH_EDGE_URL. */
  edgeUrl: string;
  concurrency: number;
  /** The most sends of a line (BATCH_LINE_ATTEMPTS). */
  attempts: number;
  leaseMs: number;
  pollIntervalMs: number;
  /** The first backoff of a line sent again without Retry-After (1 s unless given). */
  retryBaseMs?: number;
}

/** What one send of a line came to. */
type Sent = { answer: LineAnswer; retryAfter: string | null } | { unreachable: string };

/** The lane; see the file's comment. */
export class BatchLane {
  private readonly running = new Map<string, AbortController>();
  private loop: Promise<void> | undefined;
  private stopping = false;
  /** Set when the lines in flight are handed back or abandoned: nothing more is written. */
  private letGo = false;
  private woken = false;
  private wakeUp: (() => void) | undefined;
  private idle: Array<() => void> = [];

  constructor(private readonly options: LaneOptions) {}

  /** Lines running here now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Starts the loop. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Looks for work at once rather than at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /**
   * Claims nothing more, waits up to `graceMs` for the lines in flight, then stops them and hands
   * back every line still held here (queued again, for another replica to take at once).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.whenIdle(), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    }
    this.letGo = true;
    for (const controller of this.running.values()) controller.abort();
    const released = await releaseLines(this.options.pool, this.options.replica).catch((error: unknown) => {
      this.options.logger.warn({ err: describeError(error) }, 'the lines in flight could not be handed back; their leases expire instead');
      return 0;
    });
    if (released > 0) this.options.logger.info({ lines: released }, 'lines in flight handed back to the queue');
  }

  /** Stops at once, writing nothing more and leaving the leases to expire (a replica that died). */
  abandon(): void {
    this.stopping = true;
    this.letGo = true;
    for (const controller of this.running.values()) controller.abort();
    this.wake();
  }

  private whenIdle(): Promise<void> {
    return this.running.size === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  private async run(): Promise<void> {
    const { pool, replica, concurrency, leaseMs, pollIntervalMs, watch, logger } = this.options;
    let renewedAt = Date.now();
    while (!this.stopping) {
      this.woken = false;
      let full = false;
      try {
        await finalizeReady(pool, logger);
        if (Date.now() - renewedAt > leaseMs / 3 && this.running.size > 0) {
          await renewLeases(pool, replica, leaseMs);
          renewedAt = Date.now();
        }
        const free = concurrency - this.running.size;
        if (free > 0 && !this.stopping) {
          const claimed = await claimLines(pool, replica, free, leaseMs);
          for (const line of claimed) this.launch(line);
          full = claimed.length === free;
        } else full = true;
        watch.answered();
      } catch (error) {
        watch.failed(error);
      }
      // More may be waiting when the last claim took every free slot: go on once a slot frees.
      if (!(full && this.running.size < concurrency)) await this.sleep(pollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken || this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        done();
      };
    });
  }

  private launch(line: ClaimedLine): void {
    const key = `${line.batchId}/${line.index}`;
    const controller = new AbortController();
    this.running.set(key, controller);
    this.runLine(line, controller.signal)
      .catch((error: unknown) => {
        if (this.letGo) return;
        this.options.watch.failed(error);
        this.options.logger.warn({ err: describeError(error), batch_id: line.batchId, line: line.index }, 'a line could not be written; its lease expires');
      })
      .finally(() => {
        this.running.delete(key);
        if (this.running.size === 0) for (const resolve of this.idle.splice(0)) resolve();
        this.wake();
      });
  }

  /** Sends one line and writes what it came to. */
  private async runLine(line: ClaimedLine, signal: AbortSignal): Promise<void> {
    const { pool, replica, counters, attempts } = this.options;
    let apiKey: string | undefined;
    try {
      apiKey = line.sealedKey ? this.options.cipher.open(line.sealedKey).api_key : undefined;
    } catch {
      this.options.logger.error({ batch_id: line.batchId }, "a batch's sealed API key does not open: is BATCH_SECRETS_KEY the same on every replica?");
    }
    if (!apiKey) {
      if (await finishLine(pool, replica, line, { error: { code: 'key_unavailable', message: "The batch's API key could not be read." } }))
        counters.line('failed');
      return;
    }
    const sent = await this.send(line, apiKey, signal);
    if (this.letGo || signal.aborted) return;
    const again = 'answer' in sent ? retryableStatus(sent.answer.statusCode) : true;
    if (again && line.attempts < attempts) {
      const delay = retryDelayMs(line.attempts, 'answer' in sent && sent.answer.statusCode === 429 ? sent.retryAfter : null, this.options.retryBaseMs ?? 1_000);
      if (await requeueLine(pool, replica, line, delay)) counters.line('retried');
      return;
    }
    const end =
      'answer' in sent
        ? { answer: sent.answer }
        : { error: { code: 'connection_failed', message: `The gateway's API could not be reached (${sent.unreachable}).` } };
    if (await finishLine(pool, replica, line, end)) counters.line('answer' in end ? 'answered' : 'failed');
  }

  /** One POST of the line to the edge; its answer, whatever its status, or why it got none. */
  private async send(line: ClaimedLine, apiKey: string, signal: AbortSignal): Promise<Sent> {
    try {
      const response = await fetch(`${this.options.edgeUrl.replace(/\/+$/, '')}${line.url}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'x-gateway-batch-id': line.batchId,
          ...(line.url === MESSAGES_URL ? { 'anthropic-version': ANTHROPIC_VERSION } : {}),
        },
        body: JSON.stringify(sentBody(line.body)),
        signal,
      });
      const text = await response.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = { error: { message: text.slice(0, 2_000), type: 'server_error' } };
      }
      return {
        answer: { statusCode: response.status, requestId: response.headers.get('x-request-id') ?? '', body },
        retryAfter: response.headers.get('retry-after'),
      };
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return { unreachable: cause?.code ?? cause?.message ?? (error as Error).message ?? 'failed' };
    }
  }
}
