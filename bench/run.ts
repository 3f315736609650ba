/**
 * `pnpm bench [suite ...]`: runs the benchmark suites (bench/*.bench.ts) one after another and
 * prints their tables. Each suite measures in one run what it compares, and reports ratios, since
 * absolute numbers on a shared machine mean little. Suites need the workspace built and Redis and
 * NATS reachable (REDIS_URL / NATS_URL, as for the tests).
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** One benchmark suite. */
export interface BenchSuite {
  name: string;
  description: string;
  run(): Promise<void>;
}

const folder = fileURLToPath(new URL('.', import.meta.url));
// Flags (`--pin`) are read by the suites that take them.
const wanted = process.argv.slice(2).filter((argument) => !argument.startsWith('--'));
const files = readdirSync(folder)
  .filter((name) => name.endsWith('.bench.ts'))
  .sort();
for (const file of files) {
  const { suite } = (await import(`./${file}`)) as { suite: BenchSuite };
  if (wanted.length > 0 && !wanted.includes(suite.name)) continue;
  console.log(`\n## ${suite.name}: ${suite.description}\n`);
  await suite.run();
}
// A suite that misses a target it checks sets process.exitCode.
process.exit(process.exitCode ?? 0);
