/**
 * `pnpm --silent --filter @gateway/router score`: reads JSON lines `{"id", "messages"}` on
 * standard input and writes `{"id", "score"}` lines on standard output, in input order, with the
 * scorer and the prompt text Route uses. It streams (one line in memory at a time, and it waits
 * when standard output is full). A line that is not JSON, or has no `id`, is reported on standard
 * error with its line number and skipped; a line whose `messages` cannot be read is scored as the
 * text that can be read from it (possibly none) and reported too. The exit code is 0 unless the
 * model file cannot be loaded.
 */
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { AutoRouterScorer, loadAutoRouterModel } from './auto-router-model.js';
import { promptText } from './prompt-text.js';

const scorer = new AutoRouterScorer(loadAutoRouterModel());
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
let lineNumber = 0;
for await (const line of lines) {
  lineNumber += 1;
  if (line.trim() === '') continue;
  let record: { id?: unknown; messages?: unknown };
  try {
    record = JSON.parse(line) as typeof record;
  } catch (error) {
    process.stderr.write(`line ${lineNumber}: not JSON (${(error as Error).message}); skipped\n`);
    continue;
  }
  if (record === null || typeof record !== 'object' || record.id === undefined || record.id === null) {
    process.stderr.write(`line ${lineNumber}: no "id"; skipped\n`);
    continue;
  }
  if (!Array.isArray(record.messages)) process.stderr.write(`line ${lineNumber}: "messages" is not an array; scored as an empty prompt\n`);
  const output = `${JSON.stringify({ id: record.id, score: scorer.score(promptText(record.messages)) })}\n`;
  if (!process.stdout.write(output)) await once(process.stdout, 'drain');
}
