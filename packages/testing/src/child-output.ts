/** The output of a child process a test runs. */
import { spawn } from 'node:child_process';
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

/** How a script a test ran ended: its exit code (null when a signal ended it) and all it wrote. */
export interface ScriptResult extends ChildOutput {
  code: number | null;
}

/** Runs a Node script (a CLI's built entry point) with `args` and exactly `env`, resolving once it has exited. */
export function runScript(script: string, args: readonly string[], env: Record<string, string>): Promise<ScriptResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env });
    const output = collectOutput(child);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ...output }));
  });
}
