/** The output of a child process a test runs. */
import type { Readable } from 'node:stream';

/** All a child process wrote so far to its stdout and to its stderr, as text. */
export interface ChildOutput {
  stdout: string;
  stderr: string;
}

/** Collects what `child` writes to its piped stdout and stderr, as it writes it, into the object returned. */
export function collectOutput(child: { stdout: Readable | null; stderr: Readable | null }): ChildOutput {
  const output: ChildOutput = { stdout: '', stderr: '' };
  child.stdout?.on('data', (data: Buffer) => {
    output.stdout += data.toString();
  });
  child.stderr?.on('data', (data: Buffer) => {
    output.stderr += data.toString();
  });
  return output;
}
