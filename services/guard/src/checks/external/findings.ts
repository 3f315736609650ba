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
