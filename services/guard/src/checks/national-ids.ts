/**
 * The national identity numbers of the personal data check (pii.ts), each a printed form and the
 * rule that tells an issued number from one that merely looks like it: `us_ssn` AAA-GG-SSSS
 * outside the SSA's never-issued ranges; `uk_nino` HMRC's prefixes, six digits, a suffix A to D;
 * `ca_sin` 9 digits (3-3-3) passing Luhn; `in_aadhaar` 12 digits (4-4-4), not starting with 0 or 1,
 * passing Verhoeff. Each pattern is bounded, so a finder runs in time linear in its text.
 */
import { passesLuhn, passesVerhoeff } from './checksums.js';

/** A number found: its entity and where it is. */
export interface IdSpan {
  entity: 'us_ssn' | 'uk_nino' | 'ca_sin' | 'in_aadhaar';
  start: number;
  end: number;
}

/** A US Social Security number as printed, AAA-GG-SSSS, not inside a longer number. */
const US_SSN = /(?<!\d|\d-)(\d{3})-(\d{2})-(\d{4})(?!\d|-\d)/g;

/** SSNs outside the ranges the SSA never issues: area 000, 666 or 900-999; group 00; serial 0000. */
export function findUsSsns(text: string): IdSpan[] {
  const spans: IdSpan[] = [];
  for (const match of text.matchAll(US_SSN)) {
    const [whole, area, group, serial] = match as RegExpExecArray & [string, string, string, string];
    if (area === '000' || area === '666' || area[0] === '9' || group === '00' || serial === '0000') continue;
    spans.push({ entity: 'us_ssn', start: match.index, end: match.index + whole.length });
  }
  return spans;
}

/**
 * A UK National Insurance number: two prefix letters (neither D, F, I, Q, U nor V; the second not
 * O), six digits, a suffix A to D, single spaces allowed between the parts (`AB 12 34 56 C`).
 */
const UK_NINO = /(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])/gi;
/** Prefixes HMRC never allocates. */
const UK_NINO_UNUSED_PREFIXES = new Set(['BG', 'GB', 'NK', 'KN', 'TN', 'NT', 'ZZ']);

/** NINOs with an allocated prefix. */
export function findUkNinos(text: string): IdSpan[] {
  const spans: IdSpan[] = [];
  for (const match of text.matchAll(UK_NINO))
    if (!UK_NINO_UNUSED_PREFIXES.has(match[1]!.toUpperCase())) spans.push({ entity: 'uk_nino', start: match.index, end: match.index + match[0].length });
  return spans;
}

/** A Canadian SIN: 9 digits, 3-3-3 with the same space or dash (or nothing) between, not inside a longer number. */
const CA_SIN = /(?<!\d|\d[ -])\d{3}([ -]?)\d{3}\1\d{3}(?!\d|[ -]\d)/g;
/** An Aadhaar number: 12 digits, 4-4-4 likewise, the first 2 to 9. */
const IN_AADHAAR = /(?<!\d|\d[ -])[2-9]\d{3}([ -]?)\d{4}\1\d{4}(?!\d|[ -]\d)/g;

/** The matches of `pattern` whose digits pass `check`. */
function findChecked(text: string, pattern: RegExp, entity: 'ca_sin' | 'in_aadhaar', check: (digits: string) => boolean): IdSpan[] {
  const spans: IdSpan[] = [];
  for (const match of text.matchAll(pattern)) {
    const digits = match[0].replace(/\D/g, '');
    if (/^0+$/.test(digits) || !check(digits)) continue;
    spans.push({ entity, start: match.index, end: match.index + match[0].length });
  }
  return spans;
}

/** Canadian SINs passing Luhn. */
export function findCaSins(text: string): IdSpan[] {
  return findChecked(text, CA_SIN, 'ca_sin', passesLuhn);
}

/** Aadhaar numbers passing Verhoeff. */
export function findAadhaars(text: string): IdSpan[] {
  return findChecked(text, IN_AADHAAR, 'in_aadhaar', passesVerhoeff);
}
