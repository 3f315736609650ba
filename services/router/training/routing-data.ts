import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import type { AutoRouterModel } from '../src/auto-router-model.js';
import { promptText } from '../src/prompt-text.js';
import type { RoutingRow } from './train-auto-router.js';

/** The routing data the repository ships (fields in data/README.md beside this file). */
export const DEFAULT_DATA_PATH = fileURLToPath(new URL('./data/train.jsonl.gz', import.meta.url));

/** Reads the routing data (JSON lines, gzip-compressed when the name ends in .gz) into training rows. */
export function readRoutingRows(path: string = DEFAULT_DATA_PATH): RoutingRow[] {
  const bytes = readFileSync(path);
  return (path.endsWith('.gz') ? gunzipSync(bytes) : bytes)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const row = JSON.parse(line) as { id: string; source: string; subject?: string; messages: unknown; weak_correct: boolean; strong_correct: boolean };
      return {
        id: row.id,
        source: row.source,
        subject: row.subject,
        text: promptText(row.messages),
        weakCorrect: row.weak_correct,
        strongCorrect: row.strong_correct,
      };
    });
}

/** The model file's exact text: the training command writes it and the test compares with it. */
export function serializeModel(model: AutoRouterModel): string {
  return `${JSON.stringify(model)}\n`;
}
