import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MODULE = fileURLToPath(new URL('./shutdown-signal.ts', import.meta.url));
/**
 * tsx's loader, imported into node itself: signals reach the process under test directly. Through
 * tsx's CLI they would pass a parent that gives the child 30 ms to say it got one and otherwise
 * kills it (exit 143), which a loaded machine exceeds.
 */
const TSX = createRequire(import.meta.url).resolve('tsx', { paths: [ROOT] });

/**
 * Runs a process that starts its lifecycle (logging JSON lines as a service's pino does), then runs
 * `failure`; resolves its exit code and what it logged.
 */
function runProcess(failure: string): Promise<{ code: number | null; lines: Array<Record<string, unknown>> }> {
  const program = `
    import { startLifecycle } from ${JSON.stringify(MODULE)};
    const log = (level) => (object, message) => console.log(JSON.stringify({ level, ...object, msg: message }));
    const logger = { info: log('info'), error: log('error') };
    const lifecycle = startLifecycle(logger, { graceMs: 5_000 });
    lifecycle.onStop(async (signal) => { console.log(JSON.stringify({ level: 'info', msg: 'stop ran', signal })); });
    // A server that would keep the process alive.
    setInterval(() => {}, 1_000);
    ${failure}
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, '--input-type=module', '-e', program], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** A process serving /readyz (503 once shutting down) and /work over HTTP, with a shutdown delay. */
interface ServingProcess {
  child: ChildProcess;
  port: number;
  lines: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

/** Starts a process whose lifecycle has `delayMs`, `steps` (program text) registered after its HTTP server. */
async function startServing(delayMs: number, steps = ''): Promise<ServingProcess> {
  const program = `
    import { createServer } from 'node:http';
    import { startLifecycle } from ${JSON.stringify(MODULE)};
    const log = (level) => (object, message) => console.log(JSON.stringify({ level, ...object, msg: message, at: Date.now() }));
    const logger = { info: log('info'), error: log('error') };
    const lifecycle = startLifecycle(logger, { graceMs: 5_000, delayMs: ${delayMs} });
    const server = createServer((request, response) => {
      if (request.url === '/readyz') response.writeHead(lifecycle.shuttingDown ? 503 : 200).end();
      else response.writeHead(200).end('served');
    });
    server.keepAliveTimeout = 1;
    lifecycle.onStop(() => new Promise((resolve) => { log('info')({}, 'server closed'); server.close(resolve); server.closeAllConnections(); }));
    ${steps}
    server.listen(0, '127.0.0.1', () => log('info')({ port: server.address().port }, 'listening'));
  `;
  const child = spawn(process.execPath, ['--import', TSX, '--input-type=module', '-e', program], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let pending = '';
  const listening = new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      pending += data.toString();
      const complete = pending.split('\n');
      pending = complete.pop()!;
      for (const line of complete.filter((text) => text.startsWith('{'))) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        lines.push(parsed);
        if (parsed.msg === 'listening') resolve(parsed.port as number);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before listening`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, port: await listening, lines, exited };
}

describe('the shutdown delay', () => {
  it('reports not-ready at once on SIGTERM and serves on until the delay ends, then stops accepting and exits 0', async () => {
    const delayMs = 1_500;
    const serving = await startServing(delayMs);
    const url = (path: string) => fetch(`http://127.0.0.1:${serving.port}${path}`);
    expect((await url('/readyz')).status).toBe(200);
    const signalled = Date.now();
    serving.child.kill('SIGTERM');
    // Waits for the not-ready answer (the signal is delivered asynchronously).
    let ready = 200;
    while (ready === 200) ready = (await url('/readyz')).status;
    expect(ready).toBe(503);
    // Not ready, and still serving: the server is not closed before the delay ends.
    const work = await url('/work');
    expect(work.status).toBe(200);
    expect(await work.text()).toBe('served');
    expect(serving.lines.some((line) => line.msg === 'server closed')).toBe(false);
    expect(await serving.exited).toBe(0);
    const closed = serving.lines.find((line) => line.msg === 'server closed');
    expect(closed, JSON.stringify(serving.lines)).toBeDefined();
    // The stop steps ran no sooner than the delay after the signal.
    expect((closed!.at as number) - signalled).toBeGreaterThanOrEqual(delayMs);
    await expect(url('/readyz')).rejects.toThrow();
  }, 30_000);

  it('runs the stop steps last added first, runs the others when one throws, and then exits 1', async () => {
    const serving = await startServing(
      0,
      `lifecycle.onStop(() => log('info')({}, 'first added'));
       lifecycle.onStop(() => { throw new Error('quit failed'); });
       lifecycle.onStop(() => log('info')({}, 'last added'));`,
    );
    serving.child.kill('SIGTERM');
    expect(await serving.exited).toBe(1);
    const order = serving.lines
      .map((line) => line.msg)
      .filter((message) => ['last added', 'shutdown step failed', 'first added', 'server closed'].includes(message as string));
    expect(order).toEqual(['last added', 'shutdown step failed', 'first added', 'server closed']);
    expect(serving.lines.find((line) => line.msg === 'shutdown step failed')?.err).toMatchObject({ message: 'quit failed' });
  }, 30_000);
});
