import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configMapVolume } from '@gateway/testing';
import { ReloadableFile, type ReloadCounter, type ReloadLogger } from './reloadable-file.js';

/** A toy file format: `limit: <positive integer>`, anything else invalid. */
function parseLimit(text: string, path: string): { limit: number } {
  const match = /^limit: (\d+)\s*$/.exec(text);
  if (!match || Number(match[1]) <= 0) throw new Error(`${path}: expected "limit: <positive integer>"`);
  return Object.freeze({ limit: Number(match[1]) });
}

/** Records what a reloadable file logs and counts. */
function recorder() {
  const errors: string[] = [];
  const counts: string[] = [];
  const logger: ReloadLogger = { info: () => undefined, error: (object) => errors.push(String((object as { error?: string }).error ?? '')) };
  const counter: ReloadCounter = {
    inc: (labels, value = 1) => {
      if (value > 0) counts.push(`${labels.file}:${labels.outcome}`);
    },
  };
  return { errors, counts, logger, counter };
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const directories: string[] = [];
const files: ReloadableFile<unknown>[] = [];

function tempDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'reloadable-file-'));
  directories.push(directory);
  return directory;
}

function open<Value>(file: ReloadableFile<Value>): ReloadableFile<Value> {
  files.push(file as ReloadableFile<unknown>);
  return file;
}

afterEach(() => {
  for (const file of files.splice(0)) file.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('ReloadableFile', () => {
  it('reads and validates the file at once, and refuses an invalid one at start', () => {
    const directory = tempDirectory();
    writeFileSync(join(directory, 'good.yaml'), 'limit: 5');
    writeFileSync(join(directory, 'bad.yaml'), 'limit: none');
    expect(new ReloadableFile({ path: join(directory, 'good.yaml'), name: 'limits', parse: parseLimit }).current).toEqual({ limit: 5 });
    expect(() => new ReloadableFile({ path: join(directory, 'bad.yaml'), name: 'limits', parse: parseLimit })).toThrow(/bad\.yaml: expected/);
    expect(() => new ReloadableFile({ path: join(directory, 'missing.yaml'), name: 'limits', parse: parseLimit })).toThrow(/ENOENT/);
  });

  it('swaps in a changed file written in place, tells its listeners, and leaves a value taken earlier as it was', async () => {
    const directory = tempDirectory();
    const path = join(directory, 'limits.yaml');
    writeFileSync(path, 'limit: 5');
    const { counts, logger, counter } = recorder();
    const file = open(new ReloadableFile({ path, name: 'limits', parse: parseLimit, logger, counter, intervalMs: 60_000, debounceMs: 20 }).start());
    const changes: string[] = [];
    file.onChange((value, previous) => changes.push(`${previous.limit}->${value.limit}`));
    const taken = file.current;
    writeFileSync(path, 'limit: 7');
    // The poll is a minute away: only the watch can see this change in time.
    await until(() => file.current.limit === 7, 'the watched change');
    expect(taken).toEqual({ limit: 5 });
    expect(changes).toEqual(['5->7']);
    expect(counts).toEqual(['limits:success']);
    expect(file.reloadCount).toBe(1);
  });

  it('keeps the value in use when the new file is invalid, reports it once, and takes the next valid one', async () => {
    const directory = tempDirectory();
    const path = join(directory, 'limits.yaml');
    writeFileSync(path, 'limit: 5');
    const { errors, counts, logger, counter } = recorder();
    const file = open(new ReloadableFile({ path, name: 'limits', parse: parseLimit, logger, counter, intervalMs: 60_000, debounceMs: 20 }).start());
    writeFileSync(path, 'limit: -3');
    await until(() => counts.length === 1, 'the invalid change to be counted');
    expect(file.current).toEqual({ limit: 5 });
    expect(counts).toEqual(['limits:invalid']);
    expect(errors).toEqual([`${path}: expected "limit: <positive integer>"`]);
    // The same bad text seen again (the poll) is not reported again.
    expect(file.check()).toBe('invalid');
    expect(counts).toEqual(['limits:invalid']);
    writeFileSync(path, 'limit: 9');
    await until(() => file.current.limit === 9, 'the valid change');
    expect(counts).toEqual(['limits:invalid', 'limits:success']);
  });

  it('keeps the value in use while the file is missing, and reloads when it is back', () => {
    const directory = tempDirectory();
    const path = join(directory, 'limits.yaml');
    writeFileSync(path, 'limit: 5');
    const { counts, logger, counter } = recorder();
    const file = new ReloadableFile({ path, name: 'limits', parse: parseLimit, logger, counter });
    rmSync(path);
    expect(file.check()).toBe('unreadable');
    expect(file.current).toEqual({ limit: 5 });
    writeFileSync(path, 'limit: 6');
    expect(file.check()).toBe('success');
    expect(file.current).toEqual({ limit: 6 });
    expect(counts).toEqual(['limits:unreadable', 'limits:success']);
  });

  it('follows a ConfigMap update: the ..data symlink swapped to a new directory', async () => {
    const volume = configMapVolume(tempDirectory(), 'limits.yaml', 'limit: 5');
    const file = open(new ReloadableFile({ path: volume.path, name: 'limits', parse: parseLimit, intervalMs: 60_000, debounceMs: 20 }).start());
    expect(file.current.limit).toBe(5);
    volume.update('limit: 8');
    await until(() => file.current.limit === 8, 'the swapped ConfigMap to be read');
    volume.update('limit: 0');
    volume.update('limit: 11');
    await until(() => file.current.limit === 11, 'the second swap to be read');
  });

  it('finds a change by polling when no watch event comes', async () => {
    const volume = configMapVolume(tempDirectory(), 'limits.yaml', 'limit: 5');
    // A debounce longer than the test stands for a watch that never fires.
    const file = open(new ReloadableFile({ path: volume.path, name: 'limits', parse: parseLimit, intervalMs: 50, debounceMs: 600_000 }).start());
    volume.update('limit: 4');
    await until(() => file.current.limit === 4, 'the poll to find the change');
  });

  it('never reloads with an interval of 0', async () => {
    const directory = tempDirectory();
    const path = join(directory, 'limits.yaml');
    writeFileSync(path, 'limit: 5');
    const file = open(new ReloadableFile({ path, name: 'limits', parse: parseLimit, intervalMs: 0, debounceMs: 1 }).start());
    writeFileSync(path, 'limit: 6');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(file.current.limit).toBe(5);
  });
});
