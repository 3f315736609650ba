/**
 * The phone finder finds what libphonenumber finds in the whole text, with the same spans, though
 * it blanks out the runs of digits too short to be a number first; and it finds nothing but
 * +country numbers without a default region.
 */
import { type CountryCode, findPhoneNumbersInText } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { createPhoneFinder } from './phone-numbers.js';

/** Texts mixing numbers with the short runs of digits the finder blanks out. */
const TEXTS = [
  'Call (415) 555-2671 ext. 12 or +44 20 7946 0958, not 12 or 3.',
  'Meeting on 2024-05-01 at 10:30, room 12, +1 (415) 555-2671 x 7, then 020 7946 0958.',
  'Reach us: (+44) 20 7946 0958 / +33 1 42 68 53 00 / +49 30 901820 / 1 2 3 4.',
  'Short: 4 5 6 and +1 +1 +1, then 011 44 20 7946 0958 and 00 44 20 7946 0958.',
  'Niue 4002, Austria 01 5880, order #12345, pages 211-227 (2003), ＋４４ ２０ ７９４６ ０９５８.',
  'ids 12-34 56 78-90, 415 555 2671 415 555 2672 and a date 3/10/2011.',
];

describe('createPhoneFinder', () => {
  for (const region of ['US', 'GB', 'AT', 'NU', undefined] as Array<CountryCode | undefined>)
    it(`finds what libphonenumber finds in the whole text (${region ?? 'no default region'})`, () => {
      const find = createPhoneFinder(region);
      for (const text of TEXTS) {
        const expected = findPhoneNumbersInText(text, region ? { defaultCountry: region } : {}).map((found) => ({ start: found.startsAt, end: found.endsAt }));
        expect(find(text), `${region}: ${text}`).toEqual(expected);
      }
    });

  it('finds numbers at all, and only +country ones without a default region', () => {
    const text = 'call (415) 555-2671 or +44 20 7946 0958';
    expect(createPhoneFinder('US')(text).map((span) => text.slice(span.start, span.end))).toEqual(['(415) 555-2671', '+44 20 7946 0958']);
    expect(createPhoneFinder(undefined)(text).map((span) => text.slice(span.start, span.end))).toEqual(['+44 20 7946 0958']);
  });
});
