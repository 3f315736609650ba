/** Stand-in until the secret rules land. */
import type { Scanner } from './scanner.js';

export function createSecretsScanner(): Scanner {
  return {
    scan: (texts) =>
      texts.map((text) =>
        [...text.matchAll(/\b(?:sk|br)-[A-Za-z0-9_-]{16,}/g)].map((match) => ({ entity: 'api_key', start: match.index, end: match.index + match[0].length })),
      ),
  };
}
