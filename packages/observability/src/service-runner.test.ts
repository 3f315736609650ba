import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MODULE = fileURLToPath(new URL('./service-runner.ts', import.meta.url));
/** tsx's loader, imported into node itself: the process under test is the one spawned, no tsx parent relaying its signals. */
const TSX = createRequire(import.meta.url).resolve('tsx', { paths: [ROOT] });

interface Run {
  code: number | null;
  lines: Array<Record<string, unknown>>;
}

/**
 * Runs a service through runService whose `open` is `body` (it has `context` and `say(msg)`, a
 * line on stdout), then `after` (given the runService promise); resolves its exit code and lines.
 */
function runServiceProcess(body: string, after = '', environment: Record<string, string> = {}): Promise<Run> {
  const program = `
    import { runService, servedGrpc } from ${JSON.stringify(MODULE)};
    const say = (msg, extra = {}) => console.log(JSON.stringify({ msg, time: new Date().toISOString(), ...extra }));
    const running = runService({
      name: 'demo',
      config: (env) => { if (env.DEMO_BAD) throw new Error('DEMO_BAD is set'); return { LOG_LEVEL: 'info' }; },
      shutdown: () => ({ graceMs: 1_000 }),
      open: async (context) => { ${body} },
    });
    ${after}
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, '--input-type=module', '-e', program], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...environment },
    });
    let output = '';
    child.stdout.on('data', (data: Buffer) => {
      output += data.toString();
    });
    child.stderr.on('data', (data: Buffer) => {
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

const messages = (run: Run) => run.lines.map((line) => line.msg);

describe('runService', () => {
  it('drains what it serves first, then closes the resources last-opened-first, and exits 0 on SIGTERM', async () => {
    const run = await runServiceProcess(
      `
      context.open('first', () => say('closed first'));
      context.open('second', () => say('closed second'));
      const timer = setInterval(() => {}, 1_000);
      return {
        listen: async () => 1234,
        reportNotServing: () => say('not serving'),
        drain: () => { say('drained'); clearInterval(timer); },
        listening: (port) => [{ port }, 'demo listening'],
      };`,
      `await running; process.kill(process.pid, 'SIGTERM');`,
    );
    expect(run.code).toBe(0);
    // The service's own lines in their order; the logger's listening line before them by its time
    // (two writers, whose output may interleave in either order).
    const order = messages(run).filter((msg) => ['not serving', 'drained', 'closed second', 'closed first'].includes(msg as string));
    expect(order).toEqual(['not serving', 'drained', 'closed second', 'closed first']);
    const timeOf = (msg: string) => Date.parse(String(run.lines.find((line) => line.msg === msg)?.time));
    expect(timeOf('demo listening')).toBeLessThanOrEqual(timeOf('not serving'));
    expect(run.lines.find((line) => line.msg === 'demo listening')?.port).toBe(1234);
  });

  it('closes what was opened when a resource fails to open, and exits 1 with the failure line', async () => {
    const run = await runServiceProcess(`
      context.open('first', () => say('closed first'));
      setInterval(() => {}, 1_000);
      throw new Error('the database refused');
    `);
    expect(run.code).toBe(1);
    const failure = run.lines.find((line) => line.msg === 'demo failed to start');
    expect((failure?.err as { message?: string } | undefined)?.message).toBe('the database refused');
    expect(messages(run)).toContain('closed first');
    // Closed after the failure was logged: by the lines' own times, since the logger's line and the
    // close's come through two writers whose output may interleave in either order.
    const closed = run.lines.find((line) => line.msg === 'closed first');
    expect(Date.parse(String(closed?.time))).toBeGreaterThanOrEqual(Date.parse(String(failure?.time)));
  });

  it('exits 1 with one JSON line on stderr when the config does not parse, opening nothing', async () => {
    const run = await runServiceProcess(`say('opened'); return { listen: async () => 1, drain: () => {}, listening: () => [{}, 'x'] };`, '', { DEMO_BAD: '1' });
    expect(run.code).toBe(1);
    expect(run.lines).toEqual([{ level: 'fatal', service: 'demo', msg: 'demo failed to start', error: 'DEMO_BAD is set' }]);
  });

  it('answers /readyz 503 until what it serves listens, 200 once it does, and 503 again on the signal', async () => {
    const run = await runServiceProcess(
      `
      const metrics = context.open(await context.metrics(0, { host: '127.0.0.1' }), (server) => server.close());
      const readyz = async () => (await fetch('http://127.0.0.1:' + metrics.port + '/readyz')).status;
      globalThis.readyz = readyz;
      say('before listen', { status: await readyz() });
      let release;
      globalThis.checked = new Promise((resolve) => { release = resolve; });
      globalThis.release = release;
      return {
        listen: async () => { say('while listen starts', { status: await readyz() }); return 1; },
        drain: () => globalThis.checked,
        listening: () => [{}, 'demo listening'],
        ready: () => true,
      };`,
      `await running;
      say('after listen', { status: await globalThis.readyz() });
      process.once('SIGTERM', async () => { say('after signal', { status: await globalThis.readyz() }); globalThis.release(); });
      process.kill(process.pid, 'SIGTERM');`,
    );
    expect(run.code).toBe(0);
    const status = (msg: string) => run.lines.find((line) => line.msg === msg)?.status;
    expect([status('before listen'), status('while listen starts'), status('after listen'), status('after signal')]).toEqual([503, 503, 200, 503]);
  });

  it('serves a gRPC server: NOT_SERVING on the signal, then the steps around its shutdown with the grace, then the metrics server closes in its turn', async () => {
    const run = await runServiceProcess(
      `
      context.open('first', async () => {
        const status = await fetch('http://127.0.0.1:' + globalThis.metricsPort + '/healthz').then((response) => response.status, () => 'closed');
        say('closed first', { metrics: status });
      });
      globalThis.metricsPort = (await context.openMetrics(0, { host: '127.0.0.1' })).port;
      context.tracing();
      context.open('last', () => say('closed last'));
      const timer = setInterval(() => {}, 1_000);
      const server = {
        listen: async (address) => { say('listen', { address }); return 4321; },
        reportNotServing: () => say('not serving'),
        shutdown: async (graceMs) => { say('shutdown', { graceMs }); clearInterval(timer); },
      };
      return servedGrpc(server, {
        address: '127.0.0.1:0',
        graceMs: 750,
        beforeShutdown: () => say('before shutdown'),
        afterShutdown: () => say('after shutdown'),
        beforeListen: () => say('before listen'),
        listening: (port) => [{ port }, 'demo listening'],
      });`,
      `await running; process.kill(process.pid, 'SIGTERM');`,
    );
    expect(run.code).toBe(0);
    const own = ['before listen', 'listen', 'not serving', 'before shutdown', 'shutdown', 'after shutdown', 'closed last', 'closed first'];
    expect(messages(run).filter((msg) => own.includes(msg as string))).toEqual(own);
    const line = (msg: string) => run.lines.find((entry) => entry.msg === msg);
    expect(line('listen')?.address).toBe('127.0.0.1:0');
    expect(line('shutdown')?.graceMs).toBe(750);
    expect(line('demo listening')?.port).toBe(4321);
    // The metrics server, opened after "first", is closed before it.
    expect(line('closed first')?.metrics).toBe('closed');
  });
});
