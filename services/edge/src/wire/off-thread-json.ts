/**
 * Large request bodies are parsed on a thread of their own. JSON.parse of a few megabytes holds the
 * event loop 15-30 ms (a megabyte of emoji or random code points, or of small objects), and every
 * other request waits meanwhile; parsed on a worker thread, the loop pays only for copying the
 * text there and the value back (structured clone: a few milliseconds, however many objects).
 * Small bodies, nearly all of them, are parsed in place: a thread hop would cost them more.
 */
import { Worker } from 'node:worker_threads';
import type { ParseJob, ParseOutcome } from './json-parse-worker.js';

/** Bodies of at least this many characters are parsed off the event loop. */
export const OFF_THREAD_JSON_CHARACTERS = 256 * 1024;

/** Why a body parsed off the loop was refused. */
export class JsonParseFailure extends Error {
  constructor(
    readonly failure: 'too_deep' | 'syntax',
    message: string,
  ) {
    super(message);
    this.name = 'JsonParseFailure';
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * One worker thread, started on the first large body and started again if it ever dies (the bodies
 * it held are refused, never lost silently). Bodies wait their turn: a parse takes milliseconds.
 */
export class OffThreadJson {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;

  /** Parses `text` on the worker thread. Rejects with JsonParseFailure for a body the edge refuses. */
  parse(text: string): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the JSON parser is closed'));
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, text } satisfies ParseJob);
    });
  }

  /** Stops the thread; bodies still being parsed are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('the JSON parser is closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(new URL('./json-parse-worker.js', import.meta.url));
    // The thread never keeps the process alive: the server does while it serves.
    worker.unref();
    worker.on('message', (outcome: ParseOutcome) => {
      const pending = this.pending.get(outcome.id);
      if (!pending) return;
      this.pending.delete(outcome.id);
      if ('value' in outcome) pending.resolve(outcome.value);
      else pending.reject(new JsonParseFailure(outcome.failure, outcome.message));
    });
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(error);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the JSON parser thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}
