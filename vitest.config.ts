import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// Four projects, run by `pnpm test` in three groups, one after the other:
//   0. `unit` (next to the code, no outside dependency; the web console's sources live outside the
//      edge's src/) and `integration` (`*.int.test.ts`, real Redis and NATS), side by side;
//   1. `e2e`: the five services as processes, driven by real clients and agents, and the scale,
//      failover, fault and alert drills, three files at a time (each file starts its own cluster
//      on ports of its own, with its own usage stream and keys; a drill kills only what it started);
//   2. `drills`: the hostile-body and rate-limit drills, one file at a time, since they check
//      latencies and window edges that a machine loaded by other files would blur.
// Most of a test's time here is waiting on sockets and child processes, not on the CPU, so more
// files run at once than the machine has cores (vitest's default is one worker per core less one:
// a single worker on a two-core machine).
const exclude = ['**/node_modules/**', '**/dist/**'];
// The guard's RE2 binding is a native addon built for the Node that installed the workspace: the
// Node 22 pass of scripts/test.sh (GATEWAY_TESTS_WITHOUT_NATIVE=1) leaves the guard's tests out.
const native = process.env.GATEWAY_TESTS_WITHOUT_NATIVE === '1' ? ['services/guard/**'] : [];

/** The drills that run alone on the machine. */
export const DRILLS = ['tests/e2e/hostile-drill.e2e.test.ts', 'tests/e2e/rate-limits.e2e.test.ts'];

/**
 * The end-to-end files that drive Chromium beside their cluster. Each is the heaviest load an e2e
 * file puts on the machine, so the sequencer below spreads them out: two side by side would starve
 * each other's cluster of the CPU its admin calls need.
 */
const BROWSER_FILES = /tests\/e2e\/(console[\w-]*|docs-examples)\.e2e\.test\.ts$/;

/**
 * vitest's order (failed first, then slowest first, then largest), with the e2e project's browser
 * files spread evenly through its queue: the files run in this order, a few at a time, so no two
 * browser files start near each other.
 */
export class SpreadSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const e2e = sorted.filter((file) => file.project.name === 'e2e');
    const browser = e2e.filter((file) => BROWSER_FILES.test(file.moduleId));
    if (browser.length === 0) return sorted;
    const spread = e2e.filter((file) => !BROWSER_FILES.test(file.moduleId));
    const gap = Math.max(1, Math.floor(e2e.length / browser.length));
    for (const [index, file] of browser.entries()) spread.splice(Math.min(spread.length, index * gap + Math.floor(gap / 2)), 0, file);
    return [...sorted.filter((file) => file.project.name !== 'e2e'), ...spread];
  }
}

export default defineConfig({
  test: {
    maxWorkers: 4,
    sequence: { sequencer: SpreadSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: [
            '{packages,services}/*/src/**/*.test.ts',
            'services/edge/console/src/**/*.test.ts',
            'services/router/training/**/*.test.ts',
            'scripts/**/*.test.mjs',
          ],
          exclude: [...exclude, ...native, '**/*.int.test.ts'],
          // Not vitest's 5 s: a unit test that does real work (thousands of property trials, a child
          // process) must not fail for a machine loaded by the other projects running beside it.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 0 },
          include: ['{packages,services}/*/src/**/*.int.test.ts'],
          exclude: [...exclude, ...native],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          exclude: [...exclude, ...DRILLS],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'drills',
          include: DRILLS,
          exclude,
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
