/**
 * How check-image reads the Dockerfile and .dockerignore: what it then runs is only as right as
 * these two readings.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aptPackages, ignorePattern, parseDockerfile } from './check-image.mjs';

describe('parseDockerfile', () => {
  it('reads the build and the runtime stage, joining continuation lines and dropping comment lines inside a RUN as Docker does', () => {
    const stages = parseDockerfile(
      'FROM node:22-slim AS build\nWORKDIR /app\nRUN a \\\n # a comment\n && b\n\nFROM node:22-slim\nENV NODE_ENV=production\nCMD ["sh", "-c", "exec node x"]\n',
    );
    expect(stages).toEqual([
      {
        from: 'node:22-slim AS build',
        name: 'build',
        steps: [
          { instruction: 'WORKDIR', rest: '/app' },
          { instruction: 'RUN', rest: 'a && b' },
        ],
      },
      {
        from: 'node:22-slim',
        name: undefined,
        steps: [
          { instruction: 'ENV', rest: 'NODE_ENV=production' },
          { instruction: 'CMD', rest: '["sh", "-c", "exec node x"]' },
        ],
      },
    ]);
  });

  it("finds the repository Dockerfile's install, build and prune in one RUN of the build stage, and a JSON CMD in the runtime stage", () => {
    const [build, runtime] = parseDockerfile(readFileSync(join(import.meta.dirname, '..', 'Dockerfile'), 'utf8'));
    expect(build.name).toBe('build');
    const run = build.steps.find((step) => step.rest.includes('pnpm build'));
    expect(run.rest).toMatch(/pnpm install --offline --frozen-lockfile && pnpm build && rm -rf .* --prod .* && find /);
    expect(run.rest).not.toContain('#');
    expect(JSON.parse(runtime.steps.find((step) => step.instruction === 'CMD').rest)[0]).toBe('sh');
  });

  it("installs re2's toolchain in the build stage alone, and builds re2 from source there against the image's own Node headers", () => {
    const [build, runtime] = parseDockerfile(readFileSync(join(import.meta.dirname, '..', 'Dockerfile'), 'utf8'));
    const installs = (stage) => stage.steps.flatMap((step) => (step.instruction === 'RUN' ? (aptPackages(step.rest) ?? []) : []));
    expect(installs(build).sort()).toEqual(['g++', 'make', 'python3']);
    expect(installs(runtime)).toEqual([]);
    const run = build.steps.find((step) => step.rest.includes('pnpm build')).rest;
    expect(run).toMatch(/DOWNLOAD_FORCE_BUILD=1 npm_config_nodedir=/);
    // The production install keeps the allowed builds (re2's, from the side-effects cache); with
    // --ignore-scripts the runtime would lack re2.node.
    expect(run).toMatch(/pnpm install --offline --frozen-lockfile --prod &&/);
    expect(run).not.toContain('--ignore-scripts');
    expect(JSON.parse(runtime.steps.find((step) => step.instruction === 'CMD').rest)[2]).toContain(' guard cache batch}');
  });
});

describe('aptPackages', () => {
  it.each([
    ['apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*', ['python3', 'make', 'g++']],
    ['apt-get -q update && apt-get -y install curl=7.88.1-10 && true', ['curl']],
    ['pnpm install --offline --frozen-lockfile', undefined],
    ['npm install -g pnpm@10.34.9', undefined],
  ])('reads %s as %j', (run, packages) => {
    expect(aptPackages(run)).toEqual(packages);
  });
});

describe('ignorePattern', () => {
  it.each([
    ['**/node_modules', 'services/edge/node_modules/fastify/package.json', true],
    ['**/node_modules', 'node_modules/x', true],
    ['**/dist', 'packages/grpc/dist/index.js', true],
    ['.env.*', '.env.local', true],
    ['.env.*', 'services/edge/.env.example', false],
    ['tests', 'tests/e2e/cluster.ts', true],
    ['tests', 'services/edge/tests.ts', false],
    ['**/*.tsbuildinfo', 'services/edge/tsconfig.tsbuildinfo', true],
    ['Dockerfile', 'Dockerfile', true],
  ])('%s matches %s: %s', (pattern, path, matches) => {
    expect(ignorePattern(pattern).test(path)).toBe(matches);
  });
});
