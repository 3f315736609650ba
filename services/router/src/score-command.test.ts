import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { collectOutput } from '@gateway/testing';
import { AutoRouterScorer, loadAutoRouterModel } from './auto-router-model.js';
import { promptText } from './prompt-text.js';

/** The command's launcher, as `pnpm --silent --filter @gateway/router score` runs it (it builds when needed). */
const COMMAND = fileURLToPath(new URL('../score.mjs', import.meta.url));

function run(input: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [COMMAND], { stdio: ['pipe', 'pipe', 'pipe'] });
    const output = collectOutput(child);
    child.on('error', reject);
    child.on('close', (code) => resolve({ ...output, code }));
    child.stdin.end(input);
  });
}

describe('the score command', () => {
  const scorer = new AutoRouterScorer(loadAutoRouterModel());

  it('writes one {id, score} line per readable line, with the scorer Route uses, and reports bad lines', { timeout: 30_000 }, async () => {
    const messages = [{ role: 'user', content: 'How many prime numbers are there between 10 and 50? Explain step by step.' }];
    const input = [
      JSON.stringify({ id: 'q1', messages }),
      'this is not json',
      JSON.stringify({ messages }),
      JSON.stringify({ id: 7, messages: 'oops' }),
      '',
      JSON.stringify({ id: 'q2', messages: [{ role: 'user', content: 'hi' }] }),
    ].join('\n');
    const { stdout, stderr, code } = await run(input);
    expect(code).toBe(0);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { id: 'q1', score: scorer.score(promptText(messages)) },
      { id: 7, score: 0 },
      { id: 'q2', score: scorer.score('hi') },
    ]);
    expect(stderr).toContain('line 2: not JSON');
    expect(stderr).toContain('line 3: no "id"; skipped');
    expect(stderr).toContain('line 4: "messages" is not an array');
  });

  it('streams a large input through', { timeout: 60_000 }, async () => {
    const line = JSON.stringify({ id: 'x', messages: [{ role: 'user', content: 'Explain the difference between TCP and UDP. '.repeat(50) }] });
    const { stdout, code } = await run(`${Array.from({ length: 5_000 }, () => line).join('\n')}\n`);
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toHaveLength(5_000);
  });
});
