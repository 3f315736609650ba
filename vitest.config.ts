import { defineConfig } from 'vitest/config';

// Three projects: `unit` (next to the code, no outside dependency), `integration`
// (`*.int.test.ts`, real Redis and NATS) and `e2e` (the five services as processes, driven by
// real clients). `pnpm test` runs all three.
const exclude = ['**/node_modules/**', '**/dist/**'];

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['{packages,services}/*/src/**/*.test.ts'], exclude: [...exclude, '**/*.int.test.ts'] } },
      { test: { name: 'integration', include: ['{packages,services}/*/src/**/*.int.test.ts'], exclude, testTimeout: 30_000, hookTimeout: 60_000 } },
      { test: { name: 'e2e', include: ['tests/e2e/**/*.test.ts'], exclude, testTimeout: 60_000, hookTimeout: 180_000, fileParallelism: false } },
    ],
  },
});
