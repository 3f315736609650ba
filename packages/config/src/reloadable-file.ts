/**
 * A configuration file (the model catalog, auth's plans) held in memory and reloaded when the
 * file changes, without a restart: the new text is read, validated by the caller's `parse`, and
 * swapped in at once; a file that fails to read or validate leaves the value in use as it was,
 * with an error in the log and in `gateway_config_reload_total{file,outcome}`, and never stops
 * the process.
 *
 * Two triggers, because either alone misses changes:
 * - `fs.watch` on the file's DIRECTORY, debounced. A Kubernetes ConfigMap mounted as a volume is
 *   updated by swapping the directory's `..data` symlink to a new timestamped directory: the file
 *   itself (a symlink through `..data`) is never written, so a watch on the file's inode would
 *   see nothing;
 * - a poll every `intervalMs` that reads the file and compares its SHA-256 with the one in use,
 *   for the events fs.watch drops (network filesystems, some container runtimes, a watcher that
 *   died with its directory).
 *
 * A reader takes `current` once per unit of work (a request, an event) and keeps that object: the
 * values are never mutated, so work that started before a swap finishes with the value it started
 * with.
 */
import { createHash } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';

/** What one look at the file found. */
export type ReloadOutcome = 'unchanged' | 'success' | 'invalid' | 'unreadable';

/** The logger a reloadable file reports to (pino's shape; a subset, so any pino logger fits). */
export interface ReloadLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** A counter with `file` and `outcome` labels (prom-client's Counter fits). */
export interface ReloadCounter {
  inc(labels: { file: string; outcome: string }, value?: number): void;
}

/** How a reloadable file is read, validated and watched. */
export interface ReloadableFileOptions<Value> {
  /** The file; a symlink (a ConfigMap's key) is followed on every read. */
  readonly path: string;
  /** A short name for logs and the metric's `file` label: `catalog`, `plans`. */
  readonly name: string;
  /** Validates the text; throws (with a message naming what is wrong) when it is invalid. */
  readonly parse: (text: string, path: string) => Value;
  readonly logger?: ReloadLogger;
  /** Counts every look that found a change (`success`, `invalid`, `unreadable`). */
  readonly counter?: ReloadCounter;
  /** Milliseconds between polls; 0 turns reloading off (neither watch nor poll). Default 2,000. */
  readonly intervalMs?: number;
  /** Quiet time after a watch event before the file is read, so a burst of events reads once. Default 100. */
  readonly debounceMs?: number;
}

/** Receives each new value after a successful reload, with the one it replaced; must not throw. */
export type ReloadListener<Value> = (value: Value, previous: Value) => void;

/** The poll interval when none is given. */
export const DEFAULT_RELOAD_INTERVAL_MS = 2_000;

/** A validated file, reloaded on change: see the module comment. */
export class ReloadableFile<Value> {
  private value: Value;
  private hash: string;
  /** The hash of the last invalid or unreadable text, so that it is reported once, not every poll. */
  private rejectedHash: string | undefined;
  private readonly listeners = new Set<ReloadListener<Value>>();
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private reloads = 0;

  /**
   * Reads and validates the file now; throws what `parse` throws (or the read error) when it is
   * invalid, so that a service does not start with a bad file. Call `start` to watch it.
   */
  constructor(private readonly options: ReloadableFileOptions<Value>) {
    let text: string;
    try {
      text = readFileSync(options.path, 'utf8');
    } catch (error) {
      throw new Error(`${options.path}: cannot read the ${options.name} file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    this.value = options.parse(text, options.path);
    this.hash = sha256(text);
    // Every series from the start, so that a rate over them never misses the first change.
    for (const outcome of ['success', 'invalid', 'unreadable']) options.counter?.inc({ file: options.name, outcome }, 0);
  }

  /** The value in use: take it once per unit of work and keep it. */
  get current(): Value {
    return this.value;
  }

  /** Successful reloads since start (0 until the file first changes). */
  get reloadCount(): number {
    return this.reloads;
  }

  /** Calls the listener after each successful reload until the returned function is called. */
  onChange(listener: ReloadListener<Value>): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Starts watching and polling (nothing when `intervalMs` is 0); returns this. */
  start(): this {
    const intervalMs = this.options.intervalMs ?? DEFAULT_RELOAD_INTERVAL_MS;
    if (intervalMs <= 0 || this.poll) return this;
    this.poll = setInterval(() => this.check(), intervalMs);
    this.poll.unref();
    this.watchDirectory();
    return this;
  }

  /** Stops watching and polling. */
  close(): void {
    if (this.poll) clearInterval(this.poll);
    if (this.debounce) clearTimeout(this.debounce);
    this.watcher?.close();
    this.poll = undefined;
    this.debounce = undefined;
    this.watcher = undefined;
  }

  /**
   * Reads the file now and swaps in its value when its text changed and is valid. Safe to call at
   * any time (a caller that meets something the value lacks may look again before giving up).
   */
  check(): ReloadOutcome {
    let text: string;
    try {
      text = readFileSync(this.options.path, 'utf8');
    } catch (error) {
      // Between two steps of a non-atomic replace the file may be missing: keep the value, look again later.
      return this.reject('unreadable', `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`, error);
    }
    const hash = sha256(text);
    if (hash === this.hash) {
      this.rejectedHash = undefined;
      return 'unchanged';
    }
    let value: Value;
    try {
      value = this.options.parse(text, this.options.path);
    } catch (error) {
      return this.reject('invalid', hash, error);
    }
    const previous = this.value;
    this.value = value;
    this.hash = hash;
    this.rejectedHash = undefined;
    this.reloads += 1;
    this.options.counter?.inc({ file: this.options.name, outcome: 'success' });
    this.options.logger?.info({ file: this.options.name, path: this.options.path, sha256: hash.slice(0, 12) }, `${this.options.name} reloaded`);
    for (const listener of [...this.listeners]) {
      try {
        listener(value, previous);
      } catch (error) {
        this.options.logger?.error({ err: error, file: this.options.name }, `a ${this.options.name} reload listener failed`);
      }
    }
    return 'success';
  }

  private reject(outcome: 'invalid' | 'unreadable', fingerprint: string, error: unknown): ReloadOutcome {
    if (this.rejectedHash === fingerprint) return outcome;
    this.rejectedHash = fingerprint;
    this.options.counter?.inc({ file: this.options.name, outcome });
    this.options.logger?.error(
      { file: this.options.name, path: this.options.path, outcome, error: error instanceof Error ? error.message : String(error) },
      `${this.options.name} file ${outcome === 'invalid' ? 'is invalid' : 'cannot be read'}; the ${this.options.name} in use is kept`,
    );
    return outcome;
  }

  /** Watches the directory (see the module comment); when that fails the poll still finds changes. */
  private watchDirectory(): void {
    const directory = dirname(this.options.path);
    try {
      // Any name: `..data` (a ConfigMap's swap), the file, an editor's temporary file renamed over
      // it, or none at all; a look that finds the same text costs one read and a hash.
      this.watcher = watch(directory, { persistent: false }, () => this.schedule());
      this.watcher.on('error', (error) => {
        this.options.logger?.error({ err: error, file: this.options.name }, `watching the ${this.options.name} directory failed; polling only`);
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (error) {
      this.options.logger?.error({ err: error, file: this.options.name }, `cannot watch the ${this.options.name} directory; polling only`);
    }
  }

  private schedule(): void {
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.check();
    }, this.options.debounceMs ?? 100);
    this.debounce.unref();
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
