/**
 * A linear check of how deeply a JSON text nests, run on every body before JSON.parse. V8 parses
 * deeply nested JSON several times slower than flat JSON of the same size (3.7 MB nested 100,000
 * deep: about 90 ms of the event loop), and nothing a chat request carries nests deeper than a
 * tool's schema (at most 128 levels, see parse-chat-request.ts), so a deeper body is refused
 * before it is parsed, for about a millisecond per megabyte.
 */

/** How many levels of objects and arrays a request body may nest: a schema's 128 and the envelope. */
export const MAX_JSON_NESTING = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether `text` opens more than `limit` objects and arrays inside one another. Brackets inside
 * strings do not count; a string is skipped with indexOf, so its length costs almost nothing. The
 * text need not be valid JSON: whatever this accepts, JSON.parse still judges.
 */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      // To the closing quote: one not preceded by an odd number of backslashes.
      for (;;) {
        const end = text.indexOf('"', index + 1);
        if (end < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes += 1;
        index = end;
        if (backslashes % 2 === 0) break;
      }
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth += 1;
      if (depth > limit) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return false;
}
