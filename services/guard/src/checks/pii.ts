/**
 * The personal data check: each entity found by a validator, not a bare pattern, so a number that
 * merely looks like one is left alone. `card`: 13 to 19 digits (whole, or in groups with one space or
 * dash between) passing Luhn, not inside a longer run of digits. `iban`: a country's IBAN length, printed
 * with spaces or not, passing ibantools' check. `phone`: libphonenumber's valid numbers
 * (phone-numbers.ts). `email`: an address read outwards from its `@`. `us_ssn`: AAA-GG-SSSS outside
 * the SSA's never-issued ranges. `uk_nino`: HMRC's prefixes, six digits, a suffix A to D. `ca_sin`:
 * 9 digits (3-3-3) passing Luhn. `in_aadhaar`: 12 digits (4-4-4), not starting with 0 or 1,
 * passing Verhoeff (these four: national-ids.ts).
 *
 * Every finder runs in time linear in its text (bounded patterns, or a scan outwards from each `@`
 * that reads at most an address's length); findings of different entities that overlap are
 * merged into the longest (an IBAN's digits are not also a card).
 */
import { countrySpecs, isValidIBAN } from 'ibantools';
import { isSupportedCountry } from 'libphonenumber-js/max';
import { passesLuhn } from './checksums.js';
import { findAadhaars, findCaSins, findUkNinos, findUsSsns } from './national-ids.js';
import { createPhoneFinder, type PhoneSpan } from './phone-numbers.js';
import type { Finding, Scanner } from './scanner.js';

/** Every entity the check knows, as a policy names them. */
export const PII_ENTITIES = ['card', 'iban', 'phone', 'email', 'us_ssn', 'uk_nino', 'ca_sin', 'in_aadhaar'] as const;

/** One entity the check knows. */
export type PiiEntity = (typeof PII_ENTITIES)[number];

/** The entities of a check that names none. */
const DEFAULT_ENTITIES: readonly PiiEntity[] = ['card', 'iban', 'phone', 'email'];

/** A PII check as a policy declares it (the proto's PiiCheck). */
export interface PiiSpec {
  /** The entities to find; empty: card, iban, phone and email. */
  entities: string[];
  /** The region a number without a +country code is read in (ISO 3166 alpha-2); empty: only +country numbers. */
  defaultPhoneRegion: string;
}

/** Whether `name` is an entity the check knows. */
function isPiiEntity(name: string): name is PiiEntity {
  return (PII_ENTITIES as readonly string[]).includes(name);
}

/** Why a PII check cannot be used, naming the bad entity or region; undefined when it can. */
export function validatePiiSpec(spec: PiiSpec): string | undefined {
  const unknown = spec.entities.find((entity) => !isPiiEntity(entity));
  if (unknown !== undefined) return `unknown PII entity "${unknown}" (known: ${PII_ENTITIES.join(', ')})`;
  if (spec.defaultPhoneRegion !== '' && !isSupportedCountry(spec.defaultPhoneRegion))
    return `unknown default phone region "${spec.defaultPhoneRegion}": an ISO 3166 alpha-2 code in capitals, such as US or GB`;
  return undefined;
}

/** A span some finder found, before overlaps are merged. */
type Span = Finding;

/** A run of digits joined by single spaces or dashes: a card's candidate, split into its groups. */
const DIGIT_GROUPS = /\d+(?:[ -]\d+)*/g;

/** The groups of a printed card: 3 to 6 digits each (4-4-4-4, 4-6-5, 4-4-4-4-3). */
const CARD_GROUP = /^\d{3,6}$/;

/**
 * Cards in a text. A run of digit groups is a card when its digits are 13 to 19 and pass Luhn,
 * written whole or as a card is printed: groups of 3 to 6 digits, one separator throughout. A
 * longer run may hold one (a card and its expiry, two cards) as consecutive whole groups, taken
 * longest first from the left; a group is never split, so a 20-digit order number is no card,
 * and a change of separator ends a card, so SSNs side by side are none. A run that is the
 * fraction or the whole part of a decimal (`3.14159…`) is none either.
 */
function findCards(text: string): Span[] {
  const spans: Span[] = [];
  for (const run of text.matchAll(DIGIT_GROUPS)) {
    const before = text.slice(Math.max(0, run.index - 2), run.index);
    const after = text.slice(run.index + run[0].length, run.index + run[0].length + 2);
    if (/\d[.,]$/.test(before) || /^[.,]\d/.test(after)) continue;
    const groups: Array<{ start: number; digits: string; separator: string }> = [];
    for (const group of run[0].matchAll(/\d+/g))
      groups.push({ start: run.index + group.index, digits: group[0], separator: group.index > 0 ? run[0][group.index - 1]! : '' });
    for (let first = 0; first < groups.length; ) {
      let taken = -1;
      let digits = groups[first]!.digits;
      if (digits.length >= 13 && digits.length <= 19 && digits[0] !== '0' && passesLuhn(digits)) taken = first;
      for (let last = first + 1; last < groups.length && CARD_GROUP.test(groups[first]!.digits); last += 1) {
        const group = groups[last]!;
        if (!CARD_GROUP.test(group.digits) || group.separator !== groups[first + 1]!.separator || digits.length + group.digits.length > 19) break;
        digits += group.digits;
        if (digits.length >= 13 && digits[0] !== '0' && passesLuhn(digits)) taken = last;
      }
      if (taken < 0) {
        first += 1;
        continue;
      }
      const end = groups[taken]!;
      spans.push({ entity: 'card', start: groups[first]!.start, end: end.start + end.digits.length });
      first = taken + 1;
    }
  }
  return spans;
}

/** Where an IBAN may start: a country code and two check digits, not inside a word. */
const IBAN_START = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}/g;
/** A letter or a digit (of an IBAN, or of the word it would be glued to). */
const ALPHANUMERIC = /[A-Za-z0-9]/;

/**
 * IBANs in a text: from a country code, as many letters and digits as that country's IBAN has
 * (single spaces between them allowed, as IBANs are printed), not followed by another letter or
 * digit, passing ibantools' validation of the electronic format.
 */
function findIbans(text: string): Span[] {
  const spans: Span[] = [];
  for (const start of text.matchAll(IBAN_START)) {
    const length = countrySpecs[start[0].slice(0, 2).toUpperCase()]?.chars;
    if (!length) continue;
    let electronic = '';
    let at = start.index;
    while (electronic.length < length && at < text.length) {
      const character = text[at]!;
      if (ALPHANUMERIC.test(character)) electronic += character;
      else if (!(character === ' ' && electronic.length > 0 && ALPHANUMERIC.test(text[at + 1] ?? ''))) break;
      at += 1;
    }
    if (electronic.length !== length || ALPHANUMERIC.test(text[at] ?? '')) continue;
    if (isValidIBAN(electronic.toUpperCase())) spans.push({ entity: 'iban', start: start.index, end: at });
  }
  return spans;
}

/** The characters of an address's local part (RFC 5322's atom characters and dots). */
const LOCAL_CHARACTER = /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]/;
/** The characters of a domain name. */
const DOMAIN_CHARACTER = /[A-Za-z0-9.-]/;
/** A domain label: letters, digits, inner hyphens, at most 63 characters. */
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** A top-level domain: letters (or an IDN's `xn--` form). */
const TOP_LEVEL_DOMAIN = /^(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$/;

/**
 * Email addresses in a text, read outwards from each `@`: a local part of at most 64 characters
 * (no leading, trailing or doubled dot) and a domain of at most 253 with two labels or more and a
 * top-level domain of letters. Each `@` reads at most the 318 characters around it.
 */
function findEmails(text: string): Span[] {
  const spans: Span[] = [];
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    let start = at;
    while (start > 0 && at - start <= 64 && LOCAL_CHARACTER.test(text[start - 1]!)) start -= 1;
    if (at - start > 64) continue;
    while (start < at && text[start] === '.') start += 1;
    const local = text.slice(start, at);
    if (local.length === 0 || local.endsWith('.') || local.includes('..')) continue;
    let end = at + 1;
    while (end < text.length && end - at - 1 < 254 && DOMAIN_CHARACTER.test(text[end]!)) end += 1;
    if (end - at - 1 > 253) continue;
    while (end > at + 1 && (text[end - 1] === '.' || text[end - 1] === '-')) end -= 1;
    const labels = text.slice(at + 1, end).split('.');
    if (labels.length < 2 || !labels.every((label) => DOMAIN_LABEL.test(label)) || !TOP_LEVEL_DOMAIN.test(labels.at(-1)!)) continue;
    spans.push({ entity: 'email', start, end });
  }
  return spans;
}

/**
 * Overlapping findings as one: the union of their spans, named by the longest (the first found
 * when they are as long), in order of start.
 */
function mergeSpans(spans: readonly Span[]): Finding[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Finding[] = [];
  let longest = 0;
  for (const span of sorted) {
    const last = merged.at(-1);
    if (last && span.start < last.end) {
      if (span.end - span.start > longest) {
        longest = span.end - span.start;
        last.entity = span.entity;
      }
      last.end = Math.max(last.end, span.end);
      continue;
    }
    longest = span.end - span.start;
    merged.push({ ...span });
  }
  return merged;
}

/** The finders of a spec's entities, in their order; phone numbers as `phones` (of the text) gives them. */
function findersOf(entities: readonly PiiEntity[], phones: (text: string) => Span[]): Array<(text: string) => Span[]> {
  const finders: Record<PiiEntity, (text: string) => Span[]> = {
    card: findCards,
    iban: findIbans,
    phone: phones,
    email: findEmails,
    us_ssn: findUsSsns,
    uk_nino: findUkNinos,
    ca_sin: findCaSins,
    in_aadhaar: findAadhaars,
  };
  return [...new Set(entities)].map((entity) => finders[entity]);
}

/** Texts of a call up to this many characters in all are read at once; longer ones let other calls in while their phone numbers are read. */
const AT_ONCE_CHARS = 16_384;

/** Most of a trailing number held back (a printed IBAN is at most 42 characters with its spaces). */
const MAX_HELD_NUMBER = 40;
/** Most of a trailing address held back: a local part, its `@` and a domain. */
const MAX_HELD_ADDRESS = 320;
/** The characters a number is written with. */
const NUMBER_CHARACTER = /[0-9 ()+-]/;
/** The characters an address is written with. */
const ADDRESS_CHARACTER = /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~@-]/;
/** An IBAN cut by the end of the text: country code, check digits, then letters and digits, or groups of four as printed. */
const OPEN_IBAN = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[A-Za-z0-9]{0,30}|(?: [A-Za-z0-9]{4}){0,7}(?: [A-Za-z0-9]{0,3})?) ?$/;

/** The length of the run of characters passing `test` at the end of `text`, at most `most`. */
function trailingRun(text: string, test: RegExp, most: number): number {
  let run = 0;
  while (run < most && run < text.length && test.test(text[text.length - 1 - run]!)) run += 1;
  return run;
}

/**
 * How much of the end of `text` could be personal data not yet complete: the trailing run of
 * digits, spaces, dashes, `+` and brackets when it holds a digit (with the two capitals before it:
 * an IBAN's country, a NINO's prefix), an IBAN cut short, or a trailing run of address characters.
 */
export function piiPendingTail(text: string): number {
  let number = trailingRun(text, NUMBER_CHARACTER, MAX_HELD_NUMBER);
  if (!/\d/.test(text.slice(text.length - number))) number = 0;
  else if (number < MAX_HELD_NUMBER - 2) {
    const letters = /[A-Z]{1,2}$/.exec(text.slice(Math.max(0, text.length - number - 2), text.length - number));
    if (letters) number += letters[0].length;
  }
  const iban = OPEN_IBAN.exec(text.slice(-48))?.[0].length ?? 0;
  const address = trailingRun(text, ADDRESS_CHARACTER, MAX_HELD_ADDRESS);
  return Math.max(number, iban, address);
}

/** The PII check's scanner; throws on a spec `validatePiiSpec` refuses. */
export function createPiiScanner(spec: PiiSpec): Scanner {
  const invalid = validatePiiSpec(spec);
  if (invalid) throw new Error(invalid);
  const entities = spec.entities.length > 0 ? spec.entities.filter(isPiiEntity) : DEFAULT_ENTITIES;
  const region = spec.defaultPhoneRegion !== '' && isSupportedCountry(spec.defaultPhoneRegion) ? spec.defaultPhoneRegion : undefined;
  const phones = createPhoneFinder(region);
  const named = (spans: readonly PhoneSpan[]): Span[] => spans.map((span) => ({ entity: 'phone', ...span }));
  const atOnce = findersOf(entities, (text) => named(phones(text)));
  const findAll = (finders: ReadonlyArray<(text: string) => Span[]>, text: string) => mergeSpans(finders.flatMap((find) => find(text)));
  return {
    scan: (texts, context) => {
      // libphonenumber is the one finder that costs more than a pass over the text: a text dense
      // with numbers is read in pieces, yielding between them and stopping at the deadline.
      if (!entities.includes('phone') || texts.reduce((sum, text) => sum + text.length, 0) <= AT_ONCE_CHARS) return texts.map((text) => findAll(atOnce, text));
      return Promise.all(
        texts.map(async (text) => {
          const found = named(await phones.yielding(text, context.signal));
          return findAll(
            findersOf(entities, () => found),
            text,
          );
        }),
      );
    },
    pendingTail: piiPendingTail,
  };
}
