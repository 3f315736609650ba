/**
 * Phone numbers in a text, as libphonenumber-js (with its full metadata, so "valid" is checked
 * against each country's numbering plan, not its lengths alone) finds them: valid numbers only;
 * with a default region, national numbers of that region too; without one, only numbers written
 * with their +country code.
 *
 * libphonenumber's matcher parses every run of digits and phone punctuation it meets, and a parse
 * that fails throws an error with a stack trace, so a text dense with short numbers (`+1 +1 +1`,
 * a table of small counts, dates) costs far more than prose. Two things keep that cost where
 * numbers can be: a run with fewer digits than the shortest valid number it could be (with a
 * plus sign, of any country; without, of the default region or dialled from it; without a
 * default region, none) is blanked out before the matcher runs (offsets unchanged, and not
 * within an extension's reach of a kept run), and its errors are made without a stack trace.
 */
import { type CountryCode, findPhoneNumbersInText, getCountries, getCountryCallingCode, Metadata } from 'libphonenumber-js/max';

/** libphonenumber's phone punctuation (dashes, slashes, dots, spaces, brackets, tildes). */
const PUNCTUATION = String.raw`\-\u2010-\u2015\u2212\u30FC\uFF0D\uFF0F/\uFF0E. \u00A0\u00AD\u200B\u2060\u3000()\uFF08\uFF09\uFF3B\uFF3D\[\]~\u2053\u223C\uFF5E`;
/** What may open a number: a bracket or a plus sign. */
const LEAD = String.raw`(\[\uFF08\uFF3B+\uFF0B`;
/**
 * A maximal run of digits joined by at most four punctuation characters, with up to ten lead or
 * punctuation characters before its first digit: every number libphonenumber could find lies
 * inside one (its candidates allow two leads of five characters, then blocks of digits joined by
 * four punctuation characters; a plus sign only leads). Each part is one class, disjoint from
 * the digits, so no part of a text can be read two ways: linear time, whatever the run of brackets.
 */
const DIGIT_RUN = new RegExp(String.raw`[${LEAD}${PUNCTUATION}]{0,10}\p{Nd}+(?:[${PUNCTUATION}]{0,4}\p{Nd}+)*`, 'gu');
/** A decimal digit of any script. */
const DIGIT = /\p{Nd}/gu;
/** How far after a kept run an extension (`ext. 12`, `x 12`, `#12`) may start. */
const EXTENSION_REACH = 16;

/** The fewest digits of a valid number written with its +country code, over every country. */
let fewestInternationalDigits: number | undefined;

/** The numbering plan of `region`. */
function planOf(region: CountryCode): NonNullable<Metadata['numberingPlan']> {
  const metadata = new Metadata();
  metadata.selectNumberingPlan(region);
  return metadata.numberingPlan!;
}

/** The fewest digits of a valid national number of `region`. */
function fewestNationalDigits(region: CountryCode): number {
  return Math.min(...planOf(region).possibleLengths());
}

/** The fewest digits of `region`'s international call prefix (`011`, `00`, one country's `0`), by trying each length. */
function fewestPrefixDigits(region: CountryCode): number {
  const prefix = new RegExp(`^(?:${planOf(region).IDDPrefix()})$`);
  for (let length = 1; length <= 4; length += 1)
    for (let value = 0; value < 10 ** length; value += 1) if (prefix.test(String(value).padStart(length, '0'))) return length;
  return 5;
}

/**
 * The fewest digits of a run libphonenumber can read as a valid number: with a plus sign, a
 * country's code and number; without one, a national number of the default region or its
 * international prefix and a +country number; none without a default region (Infinity).
 */
function fewestDigits(region: CountryCode | undefined): { withPlus: number; withoutPlus: number } {
  fewestInternationalDigits ??= Math.min(...getCountries().map((country) => getCountryCallingCode(country).length + fewestNationalDigits(country)));
  const withoutPlus = region ? Math.min(fewestNationalDigits(region), fewestPrefixDigits(region) + fewestInternationalDigits) : Number.POSITIVE_INFINITY;
  return { withPlus: fewestInternationalDigits, withoutPlus };
}

/** A plus sign, which a +country number starts with. */
const PLUS = /[+\uFF0B]/;

/** The fewest digits of a valid number, with its code, by country calling code (+1, +44, +880). */
let fewestByCallingCode: Map<string, number> | undefined;

/**
 * The fewest digits a run written with a plus sign needs, read from the calling code its first
 * digits spell (calling codes are prefix-free): `+1 415 555 01` needs 11 and is none, which
 * libphonenumber would otherwise parse. A code of no country (+800, ...) or digits of another
 * script than ASCII: the fewest of any country.
 */
function fewestWithPlus(run: string): number {
  if (!fewestByCallingCode) {
    fewestByCallingCode = new Map();
    for (const country of getCountries()) {
      const code = getCountryCallingCode(country);
      const fewest = code.length + fewestNationalDigits(country);
      fewestByCallingCode.set(code, Math.min(fewestByCallingCode.get(code) ?? Number.POSITIVE_INFINITY, fewest));
    }
  }
  const digits = (run.match(FIRST_DIGITS)?.[0] ?? '').match(/\p{Nd}/gu)?.join('') ?? '';
  if (/^[0-9]+$/.test(digits))
    for (let length = 1; length <= digits.length; length += 1) {
      const fewest = fewestByCallingCode.get(digits.slice(0, length));
      if (fewest !== undefined) return fewest;
    }
  return fewestInternationalDigits!;
}

/** The first three digits of a run, with what is between them. */
const FIRST_DIGITS = /\p{Nd}(?:\P{Nd}*\p{Nd}){0,2}/u;

/** A phone number's span in its text, in UTF-16 code units. */
export interface PhoneSpan {
  start: number;
  end: number;
}

/** Context read on each side of a piece: more than the longest number with its punctuation and extension. */
const PAD = 256;
/** A gap between kept runs at least this long may be cut in its middle: the pads then hold no digit that counts. */
const GAP_CUT = 2 * PAD;
/** A piece is cut once it is this long, at the next gap, or within a run longer than this. */
const PIECE_CHARS = 2_000;
/** Work between two yields to the event loop, in milliseconds. */
const SLICE_MS = 5;

/** The text with the runs too short to be a number blanked out, and where it may be cut; undefined when no run can be a number. */
interface Prepared {
  text: string;
  /** Cut points, ascending, from 0 to the text's length. */
  cuts: number[];
}

/** A finder of valid phone numbers with one default region (undefined: +country numbers only). */
export interface PhoneFinder {
  /** The numbers of `text`, read at once. */
  (text: string): PhoneSpan[];
  /**
   * The same, read a piece at a time, yielding to the event loop after each few milliseconds of
   * work, and rejecting with the signal's reason once it is aborted (a check past its deadline
   * stops reading, and other calls are answered meanwhile).
   */
  yielding(text: string, signal: AbortSignal): Promise<PhoneSpan[]>;
}

/**
 * A finder of valid phone numbers read with one default region (undefined: +country numbers only).
 *
 * libphonenumber reads a text from its start, and a parse costs about a tenth of a millisecond:
 * a text dense with numbers holds the loop for seconds. So the text is read in pieces of about
 * 2,000 characters, each with 256 characters of context on either side, and a piece keeps the
 * numbers that start in it. A piece ends in the middle of a gap of 512 characters where no digit
 * counts, so its findings are exactly those of the whole text. Where numbers follow each other
 * closer than that for more than a piece (a table of numbers), a piece ends where a run starts,
 * and within a run longer than a piece; a number is then read from the piece it starts in, with
 * the numbers before it as its context rather than the whole text's.
 */
export function createPhoneFinder(region: CountryCode | undefined): PhoneFinder {
  const minimum = fewestDigits(region);
  const options = region ? { defaultCountry: region } : {};
  const prepare = (text: string): Prepared | undefined => {
    const parts: string[] = [];
    const cuts = [0];
    let copied = 0;
    let keptEnd = Number.NEGATIVE_INFINITY;
    // Where the last run left in the text ends (kept, or within an extension's reach of one).
    let liveEnd = 0;
    let kept = false;
    for (const run of text.matchAll(DIGIT_RUN)) {
      const end = run.index + run[0].length;
      const needed = PLUS.test(run[0]) ? fewestWithPlus(run[0]) : minimum.withoutPlus;
      if ((run[0].match(DIGIT)?.length ?? 0) >= needed) {
        if (kept && run.index - cuts.at(-1)! >= PIECE_CHARS) cuts.push(run.index - liveEnd >= GAP_CUT ? Math.floor((liveEnd + run.index) / 2) : run.index);
        for (let cut = Math.max(run.index, cuts.at(-1)!) + PIECE_CHARS; cut < end - PAD; cut += PIECE_CHARS) cuts.push(cut);
        kept = true;
        keptEnd = end;
        liveEnd = end;
      } else if (run.index - keptEnd > EXTENSION_REACH) {
        parts.push(text.slice(copied, run.index), '_'.repeat(run[0].length));
        copied = end;
      } else liveEnd = end;
    }
    if (!kept) return undefined;
    parts.push(text.slice(copied));
    cuts.push(text.length);
    return { text: parts.join(''), cuts };
  };
  /** The numbers starting in piece `index` of `prepared`. */
  const readPiece = ({ text, cuts }: Prepared, index: number): PhoneSpan[] => {
    const from = cuts[index]!;
    const to = cuts[index + 1]!;
    const offset = Math.max(0, from - PAD);
    const piece = text.slice(offset, Math.min(text.length, to + PAD));
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return findPhoneNumbersInText(piece, options)
        .map((found) => ({ start: found.startsAt + offset, end: found.endsAt + offset }))
        .filter((span) => span.start >= from && span.start < to);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  };
  const find = (text: string): PhoneSpan[] => {
    const prepared = prepare(text);
    if (!prepared) return [];
    return prepared.cuts.slice(0, -1).flatMap((_, index) => readPiece(prepared, index));
  };
  find.yielding = async (text: string, signal: AbortSignal): Promise<PhoneSpan[]> => {
    const prepared = prepare(text);
    if (!prepared) return [];
    const spans: PhoneSpan[] = [];
    let sliceStart = performance.now();
    for (let index = 0; index + 1 < prepared.cuts.length; index += 1) {
      signal.throwIfAborted();
      spans.push(...readPiece(prepared, index));
      if (performance.now() - sliceStart >= SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
    return spans;
  };
  return find;
}
