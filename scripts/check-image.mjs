#!/usr/bin/env node
/**
 * Checks the image's build without a Docker engine (`pnpm check:image`): the root Dockerfile is
 * read and its steps are run here, on a copy of the build context, instead of by a builder.
 *
 * 1. The context: the working tree's files (git's view: tracked and untracked, not ignored) minus
 *    what .dockerignore leaves out, copied to a temporary directory that stands for WORKDIR.
 * 2. The build stage: each COPY from the context, and each RUN as `sh -c`, in order (Docker's
 *    rules for continuation lines and comments inside a RUN). `npm install -g pnpm@X` is not run:
 *    the pnpm on the PATH must be X. Nor is `apt-get update && apt-get install ...` (the toolchain
 *    re2's node-gyp build needs): each package it installs must be installed here. `pnpm install
 *    --offline` then resolves from this machine's pnpm store, as it does from the store
 *    `pnpm fetch` filled in the image.
 * 3. The runtime stage: every `COPY --from=build` source must exist; they are copied to a second
 *    directory (the runtime image's WORKDIR), with nothing else of the build.
 * 4. From that directory, the stage's CMD starts each service but request-log (SERVICE=<name>, the
 *    stage's ENV, NODE_ENV=production) against a Redis and a NATS started for the check on free
 *    ports (and, for the cache's entries, a second Redis, bounded and evicting as it must be; for
 *    the batch service, a PostgreSQL database of its own, createTestDatabase's, which it must
 *    migrate from its migrations/*.sql: its /readyz too); each must answer /healthz on its metrics port (the edge also on its API port), and exit
 *    0 on SIGTERM. A module the prune removed, a data file left behind, a dev-only import or a
 *    native addon (the guard's re2) the runtime files lack fails the start.
 *
 * What it does not check: the base images (node:22-slim is not pulled; this machine's Node runs
 * the services, and re2 is built against its headers), the apt packages' versions, file ownership
 * and USER, and the image's layers and size.
 *
 *   node scripts/check-image.mjs [--keep]     (--keep leaves the temporary directories)
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, freePort } from '@gateway/testing';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering', 'mcp', 'guard', 'cache', 'batch'];
const keep = process.argv.includes('--keep');
const log = (message) => console.log(`check-image: ${message}`);

/** The Dockerfile's instructions by stage: continuation lines joined, comment lines dropped (also inside a RUN, as Docker does). */
export function parseDockerfile(text) {
  const stages = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    current += current ? ` ${line.trim()}` : line.trim();
    if (current.endsWith('\\')) {
      current = current.slice(0, -1).trimEnd();
      continue;
    }
    if (current) {
      const [, instruction, rest] = current.match(/^(\S+)\s+([\s\S]*)$/) ?? [];
      if (instruction?.toUpperCase() === 'FROM') stages.push({ from: rest, name: rest.split(/\s+as\s+/i)[1], steps: [] });
      else if (instruction) stages.at(-1).steps.push({ instruction: instruction.toUpperCase(), rest });
    }
    current = '';
  }
  return stages;
}

/**
 * The packages a RUN installs with apt-get (`apt-get update && apt-get install -y
 * --no-install-recommends a b c && rm -rf /var/lib/apt/lists/*`), or undefined when it installs none.
 */
export function aptPackages(run) {
  const install = /(?:^|&&)\s*apt-get\s+(?:-\S+\s+)*install\s+([^&|;]*)/.exec(run);
  if (!install) return undefined;
  return install[1]
    .split(/\s+/)
    .filter((word) => word && !word.startsWith('-'))
    .map((word) => word.replace(/=.*$/, ''));
}

/** The packages of a list that dpkg does not have installed here (`dpkg-query -s`: `Status: install ok installed`). */
function missingPackages(packages) {
  return packages.filter((name) => {
    try {
      const status = execFileSync('dpkg-query', ['-s', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      return !/^Status: install ok installed$/m.test(status);
    } catch {
      return true;
    }
  });
}

/** A .dockerignore pattern as a regular expression over a context-relative path (a match of a directory covers what is under it). */
export function ignorePattern(pattern) {
  const source = pattern
    .replace(/^\/+|\/+$/g, '')
    .split(/(\*\*\/|\*\*|\*|\?)/)
    .map((part) => ({ '**/': '(?:.*/)?', '**': '.*', '*': '[^/]*', '?': '[^/]' })[part] ?? part.replace(/[.+^${}()|[\]\\]/g, '\\$&'))
    .join('');
  return new RegExp(`^${source}(?:/.*)?$`);
}

/** The build context: the working tree's files that .dockerignore lets through. */
function contextFiles() {
  const rules = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => (line.startsWith('!') ? { keep: true, pattern: ignorePattern(line.slice(1)) } : { keep: false, pattern: ignorePattern(line) }));
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  return files.filter((file) => existsSync(join(ROOT, file)) && rules.reduce((included, rule) => (rule.pattern.test(file) ? rule.keep : included), true));
}

function copyFromContext(files, sources, destination) {
  for (const source of sources) {
    const chosen = source === '.' ? files : files.filter((file) => file === source || file.startsWith(`${source}/`));
    if (chosen.length === 0) throw new Error(`COPY ${source}: not in the build context`);
    for (const file of chosen) {
      // As Docker copies: a file named by the source lands in the destination directory (`./`), the
      // files of a directory named by it (`patches`, or `.`) keep their paths below that directory.
      const target = join(destination, source === '.' ? file : file === source ? file.split('/').at(-1) : file.slice(source.length + 1));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(join(ROOT, file), target);
    }
  }
}

/** Runs the build stage in `work` (its WORKDIR). */
function runBuildStage(stage, work) {
  const files = contextFiles();
  log(`build context: ${files.length} files`);
  for (const { instruction, rest } of stage.steps) {
    if (instruction === 'WORKDIR') continue;
    if (instruction === 'COPY') {
      const parts = rest.split(/\s+/).filter((part) => !part.startsWith('--'));
      const destination = parts.pop();
      copyFromContext(files, parts, join(work, destination));
      log(`COPY ${rest}`);
      continue;
    }
    if (instruction !== 'RUN') throw new Error(`the build stage's ${instruction} is not something this check knows how to run`);
    const pinned = rest.match(/^npm install -g pnpm@(\S+)$/);
    if (pinned) {
      const version = execFileSync('pnpm', ['--version'], { encoding: 'utf8' }).trim();
      if (version !== pinned[1]) throw new Error(`the image installs pnpm ${pinned[1]}, this machine has ${version}`);
      log(`RUN ${rest}: pnpm ${version} is on the PATH`);
      continue;
    }
    const packages = aptPackages(rest);
    if (packages) {
      const missing = missingPackages(packages);
      if (missing.length > 0)
        throw new Error(`the image installs ${missing.join(', ')} with apt-get, which this machine lacks: apt-get install ${missing.join(' ')}`);
      log(`RUN ${rest.slice(0, 80)}...: ${packages.join(', ')} are installed here`);
      continue;
    }
    log(`RUN ${rest.slice(0, 120)}${rest.length > 120 ? '...' : ''}`);
    execFileSync('sh', ['-c', rest], { cwd: work, stdio: 'inherit', env: { ...process.env, CI: 'true' } });
  }
}

/** Copies what the runtime stage takes from the build stage into `runtime`; returns its ENV and CMD. */
function assembleRuntime(stage, build, runtime) {
  const env = {};
  let command;
  for (const { instruction, rest } of stage.steps) {
    if (instruction === 'ENV') for (const [, name, value] of rest.matchAll(/(\w+)=(\S+)/g)) env[name] = value;
    if (instruction === 'CMD') command = JSON.parse(rest);
    if (instruction !== 'COPY') continue;
    const parts = rest.split(/\s+/);
    if (!parts.some((part) => part.startsWith('--from='))) throw new Error(`the runtime stage copies from the context: COPY ${rest}`);
    const paths = parts.filter((part) => !part.startsWith('--'));
    const destination = paths.pop();
    for (const source of paths) {
      const from = join(build, source.replace(/^\/app\/?/, ''));
      if (!existsSync(from)) throw new Error(`COPY ${rest}: ${source} does not exist after the build stage`);
      const name = source.replace(/^\/app\/?/, '');
      cpSync(from, paths.length > 1 || destination.endsWith('/') ? join(runtime, destination, name.split('/').at(-1)) : join(runtime, destination), {
        recursive: true,
        verbatimSymlinks: true,
      });
    }
  }
  if (!command) throw new Error('the runtime stage has no CMD');
  return { env, command };
}

function start(command, args, options) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  child.output = [];
  const keepOutput = (data) => {
    child.output.push(data.toString());
    if (child.output.length > 50) child.output.shift();
  };
  child.stdout.on('data', keepOutput);
  child.stderr.on('data', keepOutput);
  return child;
}

async function answers(url, child, what, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) before ${url} answered:\n${child.output.join('')}`);
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${what}: ${url} did not answer within ${timeoutMs} ms:\n${child.output.join('')}`);
}

function stop(child, timeoutMs = 15_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

/** Starts the services from the runtime directory with the stage's CMD, and checks each answers and stops cleanly. */
async function startServices(runtime, image, scratch) {
  const [redisPort, cacheRedisPort, natsPort] = [await freePort(), await freePort(), await freePort()];
  const redis = start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {});
  const cacheRedis = start(
    'redis-server',
    ['--port', String(cacheRedisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'],
    {},
  );
  const natsBinary = ['/usr/sbin/nats-server', '/usr/local/bin/nats-server'].find((path) => existsSync(path)) ?? 'nats-server';
  const nats = start(natsBinary, ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', join(scratch, 'nats')], {});
  // The batch service's PostgreSQL (POSTGRES_URL's server, else 127.0.0.1:5432): a database of the check's own.
  const batchDatabase = await createTestDatabase('image_check');
  const ports = {};
  for (const name of SERVICES) ports[name] = { listen: await freePort(), metrics: await freePort() };
  const upper = (name) => name.toUpperCase();
  const env = {
    PATH: process.env.PATH,
    HOME: scratch,
    ...image.env,
    LOG_LEVEL: 'warn',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    CACHE_REDIS_URL: `redis://127.0.0.1:${cacheRedisPort}`,
    NATS_URL: `nats://127.0.0.1:${natsPort}`,
    EDGE_HOST: '127.0.0.1',
    EDGE_PORT: String(ports.edge.listen),
    DATABASE_URL: batchDatabase.url,
    BATCH_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    BATCH_EDGE_URL: `http://127.0.0.1:${ports.edge.listen}`,
  };
  for (const name of SERVICES) {
    env[`${upper(name)}_METRICS_PORT`] = String(ports[name].metrics);
    if (name === 'edge') continue;
    env[`${upper(name)}_LISTEN_ADDR`] = `127.0.0.1:${ports[name].listen}`;
    env[`${upper(name)}_SERVICE_ADDR`] = `127.0.0.1:${ports[name].listen}`;
  }
  const [program, ...args] = image.command;
  const children = {};
  const failures = [];
  try {
    for (const name of SERVICES) children[name] = start(program, args, { cwd: runtime, env: { ...env, SERVICE: name } });
    for (const name of SERVICES) {
      await answers(`http://127.0.0.1:${ports[name].metrics}/healthz`, children[name], name);
      log(`${name} started from the runtime files and answers /healthz`);
    }
    await answers(`http://127.0.0.1:${ports.edge.listen}/healthz`, children.edge, 'edge');
    // Ready only once its migrations (migrations/*.sql, outside src/) ran: the runtime files have them.
    await answers(`http://127.0.0.1:${ports.batch.metrics}/readyz`, children.batch, 'batch');
    log('batch migrated its database from the runtime files and is ready');
  } finally {
    for (const name of SERVICES) {
      if (!children[name]) continue;
      const code = await stop(children[name]);
      if (code !== 0) failures.push(`${name} exited with ${code} on SIGTERM:\n${children[name].output.join('')}`);
    }
    await Promise.all([stop(redis), stop(cacheRedis), stop(nats)]);
    await batchDatabase.drop();
  }
  if (failures.length > 0) throw new Error(failures.join('\n'));
  log('each service stopped cleanly on SIGTERM');
}

async function main() {
  const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
  const build = stages.find((stage) => stage.name === 'build');
  const runtime = stages.at(-1);
  if (!build || runtime === build) throw new Error('the Dockerfile has no build stage followed by a runtime stage');
  const scratch = mkdtempSync(join(tmpdir(), 'check-image-'));
  const work = join(scratch, 'build');
  const runtimeDirectory = join(scratch, 'runtime');
  mkdirSync(work);
  mkdirSync(runtimeDirectory);
  try {
    const started = Date.now();
    runBuildStage(build, work);
    log(`build stage done in ${Math.round((Date.now() - started) / 1000)} s`);
    const image = assembleRuntime(runtime, work, runtimeDirectory);
    await startServices(runtimeDirectory, image, scratch);
    log(`the image's build holds (${Math.round((Date.now() - started) / 1000)} s)`);
  } finally {
    if (keep) log(`kept ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(`check-image: ${error.message}`);
    process.exit(1);
  });
}
