import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { commentLines, renderEnvExample, undescribedVariables } from './env-example.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('renderEnvExample', () => {
  const schema = Type.Object({
    PORT: Type.Integer({ description: 'Port the server listens on.', default: 8080 }),
    TOKEN: Type.String({ description: 'Bearer token; empty: none.', default: '' }),
    PLANS_PATH: Type.String({ description: 'Plans file; unset = the one shipped.', examples: ['/etc/plans.yaml'], default: '/opt/app/plans.yaml' }),
  });

  it("writes each variable's description above it and its default as its value, an example commented out", () => {
    expect(renderEnvExample([{ heading: 'The server.', schemas: [schema], values: { TOKEN: 'x' } }, { text: 'EXTRA=1' }])).toBe(
      [
        '# The server.',
        '# Port the server listens on.',
        'PORT=8080',
        '# Bearer token; empty: none.',
        'TOKEN=x',
        '# Plans file; unset = the one shipped.',
        '# PLANS_PATH=/etc/plans.yaml',
        '',
        'EXTRA=1',
        '',
      ].join('\n'),
    );
  });

  it('wraps a long description between words at 100 characters', () => {
    const lines = commentLines(`${'word '.repeat(30)}end`);
    expect(lines.every((line) => line.length <= 100 && line.startsWith('# '))).toBe(true);
    expect(lines.join(' ').replaceAll('# ', '')).toBe(`${'word '.repeat(30)}end`);
  });

  it('names the variables without a description', () => {
    expect(undescribedVariables(Type.Object({ A: Type.String({ description: 'a' }), B: Type.String() }))).toEqual(['B']);
  });
});

describe("the repository's .env.example files", () => {
  it('are what the config schemas generate (pnpm gen-env)', () => {
    const tsx = createRequire(import.meta.url).resolve('tsx/cli', { paths: [ROOT] });
    const run = () => execFileSync(process.execPath, [tsx, 'scripts/gen-env-example.ts', '--check'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    expect(run).not.toThrow();
  }, 60_000);
});
