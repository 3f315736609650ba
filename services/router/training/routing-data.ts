import { readFileSync } from 'node:fs';
import type { AutoRouterModel } from '../src/auto-router-model.js';
import { promptText } from '../src/prompt-text.js';
import type { RoutingRow } from './train-auto-router.js';

/** Reads train.jsonl (fields in ../shared/data/routing/README.md) into training rows. */
export function readRoutingRows(path: string): RoutingRow[] {
  return readFileSync(path, 'utf8')
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
