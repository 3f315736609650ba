import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { failureOf, UsageError } from './command-line.js';

const USAGE = 'usage: cli.js list';
const thrownBy = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
};

describe("a command line tool's failures", () => {
  it('prints a mistake in the command line with the usage, exit code 2', () => {
    expect(failureOf(new UsageError('list needs no target'), { usage: USAGE })).toEqual({ text: `list needs no target\n${USAGE}\n`, code: 2 });
  });

  it('prints an option parseArgs refuses with the usage, exit code 2', () => {
    const error = thrownBy(() => parseArgs({ args: ['--nope'], options: {}, strict: true }));
    const failure = failureOf(error, { usage: USAGE });
    expect(failure.code).toBe(2);
    expect(failure.text).toMatch(/^Unknown option '--nope'/);
    expect(failure.text.endsWith(`${USAGE}\n`)).toBe(true);
  });

  it('prints any other failure as one line, exit code 1; a refusal that speaks for itself as it is', () => {
    class Refusal extends Error {}
    const options = { usage: USAGE, speaksForItself: (error: unknown) => error instanceof Refusal };
    expect(failureOf(new Error('connect ECONNREFUSED 127.0.0.1:6379'), options)).toEqual({ text: 'error: connect ECONNREFUSED 127.0.0.1:6379\n', code: 1 });
    expect(failureOf(new Refusal("'ttl_seconds' must be at least 1."), options)).toEqual({ text: "'ttl_seconds' must be at least 1.\n", code: 1 });
  });
});
