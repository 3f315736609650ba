import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MODULE = fileURLToPath(new URL('./shutdown-signal.ts', import.meta.url));
const TSX = createRequire(import.meta.url).resolve('tsx/cli', { paths: [ROOT] });

/**
 * Runs a process that installs onShutdownSignal (logging JSON lines as a service's pino does),
 * then runs `failure`; resolves its exit code and what it logged.
 */
function runProcess(failure: string): Promise<{ code: number | null; lines: Array<Record<string, unknown>> }> {
  const program = `
    import { onShutdownSignal } from ${JSON.stringify(MODULE)};
    const log = (level) => (object, message) => console.log(JSON.stringify({ level, ...object, msg: message }));
    const logger = { info: log('info'), error: log('error') };
    onShutdownSignal(logger, 5_000, async (signal) => { console.log(JSON.stringify({ level: 'info', msg: 'stop ran', signal })); });
    // A server that would keep the process alive.
    setInterval(() => {}, 1_000);
    ${failure}
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX, '--input-type=module', '-e', program], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (data: Buffer) => {
      output += data.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const lines = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({ code, lines });
    });
  });
}

describe('a failure outside any handler', () => {
  it('an exception thrown outside any promise is logged with its cause, then the process stops and exits 1', async () => {
    const { code, lines } = await runProcess(`setImmediate(() => { throw new TypeError('results[i] is not iterable'); });`);
    expect(code).toBe(1);
    const logged = lines.find((line) => line.level === 'error');
    expect(logged?.msg).toMatch(/uncaught exception/);
    expect(logged?.err).toMatchObject({ type: 'TypeError', message: 'results[i] is not iterable' });
    expect(lines.some((line) => line.msg === 'stop ran' && line.signal === 'uncaughtException')).toBe(true);
  }, 30_000);

  it('an unhandled rejection is logged with its cause but not its other properties, then the process stops and exits 1', async () => {
    const { code, lines } = await runProcess(
      `const error = new Error('NOSCRIPT No matching script'); error.command = { name: 'evalsha', args: ['br-secret-value'] }; void Promise.reject(error);`,
    );
    expect(code).toBe(1);
    const logged = lines.find((line) => line.level === 'error');
    expect(logged?.msg).toMatch(/unhandled promise rejection/);
    expect(logged?.err).toMatchObject({ type: 'Error', message: 'NOSCRIPT No matching script' });
    expect(JSON.stringify(lines)).not.toContain('br-secret-value');
    expect(lines.some((line) => line.msg === 'stop ran' && line.signal === 'unhandledRejection')).toBe(true);
  }, 30_000);
});
