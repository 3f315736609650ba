/**
 * The phone finder finds what libphonenumber finds in the whole text, with the same spans, though
 * it blanks out the runs of digits too short to be a number first and reads a long text in
 * pieces; it finds nothing but +country numbers without a default region; and reading a long text
 * lets other work run between its pieces and stops when its signal is aborted.
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

  /** Long texts: prose with numbers far apart, numbers close together for many pieces, one run of numbers with nothing but spaces between. */
  const LONG = [
    Array.from({ length: 120 }, (_, index) => `${'Some words about the quarter, nothing more. '.repeat(index % 5)}${TEXTS[index % TEXTS.length]} `).join(''),
    Array.from({ length: 1_500 }, (_, index) => `row ${index}: (415) 555-${String(1000 + index)}, +44 20 7946 ${String(index).padStart(4, '0')}; `).join(''),
    Array.from({ length: 1_500 }, (_, index) => `${2125550000 + index} `).join(''),
  ];

  for (const region of ['US', undefined] as Array<CountryCode | undefined>)
    it(`finds what libphonenumber finds in a long text read in pieces, at once or yielding (${region ?? 'no default region'})`, async () => {
      const find = createPhoneFinder(region);
      for (const text of LONG) {
        const expected = findPhoneNumbersInText(text, region ? { defaultCountry: region } : {}).map((found) => ({ start: found.startsAt, end: found.endsAt }));
        if (region) expect(expected.length).toBeGreaterThan(0);
        expect(find(text)).toEqual(expected);
        expect(await find.yielding(text, new AbortController().signal)).toEqual(expected);
      }
    });

  it('lets other work run while it reads a text dense with numbers, and stops once its signal is aborted', async () => {
    const find = createPhoneFinder('US');
    const text = Array.from({ length: 20_000 }, (_, index) => `${2125550000 + index} `).join('');
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 0);
    try {
      expect(await find.yielding(text, new AbortController().signal)).toHaveLength(20_000);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
    const controller = new AbortController();
    const reading = find.yielding(text, controller.signal);
    setImmediate(() => controller.abort(new Error('past the deadline')));
    await expect(reading).rejects.toThrow('past the deadline');
  });
});
