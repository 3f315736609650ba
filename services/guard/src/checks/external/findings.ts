/**
 * The findings outside services give: a category for a whole text (no span), or, where the service
 * names what it matched, each place that match is in the text. Lists are ordered as the scanner
 * interface requires (by start, so the spanless ones first) and hold each finding once.
 */
import type { Finding } from '../scanner.js';

/** A finding for the whole text: the category flagged. */
export function categoryFinding(entity: string): Finding {
  return { entity, start: -1, end: -1 };
}

/**
 * A span for each place `match` is in `text` (non-overlapping, left to right); a category finding
 * when it is in none (the service normalised what it matched, or matched across a rewrite).
 */
export function matchFindings(text: string, match: string, entity: string): Finding[] {
  const found: Finding[] = [];
  if (match.length > 0) {
    for (let at = text.indexOf(match); at !== -1; at = text.indexOf(match, at + match.length)) found.push({ entity, start: at, end: at + match.length });
  }
  return found.length > 0 ? found : [categoryFinding(entity)];
}

/** The findings once each, ordered by start (then end, then entity). */
export function orderedFindings(findings: readonly Finding[]): Finding[] {
  const unique = new Map<string, Finding>();
  for (const finding of findings) unique.set(`${finding.start}:${finding.end}:${finding.entity}`, finding);
  return [...unique.values()].sort((a, b) => a.start - b.start || a.end - b.end || a.entity.localeCompare(b.entity));
}

/** A service's category name as an entity: lower case, `/`, `-` and spaces as `_` (`self-harm/intent` -> `self_harm_intent`). */
export function entityName(category: string): string {
  return category
    .trim()
    .toLowerCase()
    .replace(/[/\s-]+/g, '_');
}

/** The UTF-16 offset of code point `codePoints` of `text`; undefined past its end. */
function utf16Offset(text: string, codePoints: number): number | undefined {
  let offset = 0;
  for (let seen = 0; seen < codePoints; seen++) {
    if (offset >= text.length) return undefined;
    offset += (text.codePointAt(offset) ?? 0) > 0xffff ? 2 : 1;
  }
  return offset;
}

/**
 * The span a service reported at [start, end), in UTF-16 code units (as JavaScript counts) or in
 * code points (as Python and Google's APIs count), whichever holds `matched` when the service
 * gave it; without `matched`, the offsets as UTF-16 when they fit the text. Where neither holds,
 * each place `matched` is in the text; a category finding when it is nowhere.
 */
export function reportedSpan(text: string, start: unknown, end: unknown, entity: string, matched?: string): Finding[] {
  if (typeof start === 'number' && typeof end === 'number' && Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end > start) {
    if (matched === undefined) return end <= text.length ? [{ entity, start, end }] : [categoryFinding(entity)];
    if (text.slice(start, end) === matched) return [{ entity, start, end }];
    const from = utf16Offset(text, start);
    const to = utf16Offset(text, end);
    if (from !== undefined && to !== undefined && text.slice(from, to) === matched) return [{ entity, start: from, end: to }];
  }
  return matched === undefined ? [categoryFinding(entity)] : matchFindings(text, matched, entity);
}
