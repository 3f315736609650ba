import { defineConfig } from 'vitest/config';

// Three projects: `unit` (next to the code, no outside dependency; the web console's sources
// live outside the edge's src/), `integration`
// (`*.int.test.ts`, real Redis and NATS) and `e2e` (the five services as processes, driven by
// real clients). `pnpm test` runs all three: unit and integration side by side, then e2e alone, so
// that the e2e timing checks (the hostile-body drill's /healthz latency) own the machine's cores.
const exclude = ['**/node_modules/**', '**/dist/**'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['{packages,services}/*/src/**/*.test.ts', 'services/edge/console/src/**/*.test.ts', 'services/router/training/**/*.test.ts'],
          exclude: [...exclude, '**/*.int.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 0 },
          include: ['{packages,services}/*/src/**/*.int.test.ts'],
          exclude,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          exclude,
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
