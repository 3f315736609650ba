/**
 * The thread that parses large request bodies (see off-thread-json.ts): the same checks as the
 * edge's own JSON parser (nesting, then JSON with prototype poisoning removed), answered by id.
 */
import { parentPort } from 'node:worker_threads';
import secureJson from 'secure-json-parse';
import { jsonNestsDeeperThan, MAX_JSON_NESTING } from './json-nesting.js';

/** A body to parse. */
export interface ParseJob {
  id: number;
  text: string;
}

/** Its outcome: the value, or why it is not JSON the edge takes. */
export type ParseOutcome = { id: number; value: unknown } | { id: number; failure: 'too_deep' | 'syntax'; message: string };

parentPort?.on('message', ({ id, text }: ParseJob) => {
  let outcome: ParseOutcome;
  if (jsonNestsDeeperThan(text, MAX_JSON_NESTING)) {
    outcome = { id, failure: 'too_deep', message: '' };
  } else {
    try {
      outcome = { id, value: secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' }) };
    } catch (error) {
      outcome = { id, failure: 'syntax', message: (error as Error).message };
    }
  }
  parentPort!.postMessage(outcome);
});
