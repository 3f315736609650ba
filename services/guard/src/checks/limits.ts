/**
 * Limits on a point's texts: their total size (a finding without a span on the text that crosses
 * it) and the scripts their letters may be written in (each run of letters of another script is a
 * span, entity `script`). Scripts are Unicode's (`Latin`, `Cyrillic`, `Han`, ...), tested with
 * JavaScript's Unicode property classes one letter at a time; `Common` and `Inherited` (digits,
 * punctuation, combining marks) are always allowed.
 */
import type { Finding, Scanner } from './scanner.js';

/** A limits check as stored. */
export interface LimitsSpec {
  max_chars: number;
  allowed_scripts: readonly string[];
}

/** Why the spec cannot be used, or undefined. */
export function validateLimitsSpec(spec: LimitsSpec): string | undefined {
  if (!Number.isSafeInteger(spec.max_chars) || spec.max_chars < 0) return 'max_chars must be 0 (no limit) or a positive number of characters.';
  if (spec.max_chars === 0 && spec.allowed_scripts.length === 0) return 'A limits check needs max_chars or allowed_scripts.';
  if (spec.allowed_scripts.length > 50) return 'allowed_scripts lists at most 50 scripts.';
  for (const script of spec.allowed_scripts) {
    if (!/^[A-Za-z_]{2,40}$/.test(script)) return `"${script.slice(0, 40)}" is not a Unicode script name (Latin, Cyrillic, Han, ...).`;
    try {
      new RegExp(`\\p{Script=${script}}`, 'u');
    } catch {
      return `"${script}" is not a Unicode script name (Latin, Cyrillic, Han, ...).`;
    }
  }
  return undefined;
}

/** The scanner of a validated spec. */
export function createLimitsScanner(spec: LimitsSpec): Scanner {
  const scripts = [...spec.allowed_scripts, 'Common', 'Inherited'].map((script) => `\\p{Script=${script}}`).join('');
  const allowed = spec.allowed_scripts.length > 0 ? new RegExp(`[${scripts}]`, 'u') : undefined;
  return {
    scan(texts) {
      let total = 0;
      let crossed = false;
      return texts.map((text) => {
        const found: Finding[] = [];
        total += text.length;
        if (spec.max_chars > 0 && total > spec.max_chars && !crossed) {
          crossed = true;
          found.push({ entity: 'max_chars', start: -1, end: -1 });
        }
        if (allowed) {
          // A run of foreign letters, with what separates them, up to its last foreign letter.
          let runStart = -1;
          let runEnd = -1;
          let index = 0;
          for (const character of text) {
            const letter = /\p{L}/u.test(character);
            if (letter && !allowed.test(character)) {
              if (runStart < 0) runStart = index;
              runEnd = index + character.length;
            } else if (letter && runStart >= 0) {
              found.push({ entity: 'script', start: runStart, end: runEnd });
              runStart = -1;
            }
            index += character.length;
          }
          if (runStart >= 0) found.push({ entity: 'script', start: runStart, end: runEnd });
        }
        return found;
      });
    },
    pendingTail: () => 0,
  };
}
