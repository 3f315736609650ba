/**
 * The PII check as a policy sees it: each entity found with the span of what was written, a
 * number failing its checksum or outside its issued ranges left alone, spans in UTF-16 code units
 * after emoji, a policy naming an unknown entity or region refused, and a stream window's end held
 * back while it could still be the start of personal data.
 */
import { describe, expect, it } from 'vitest';
import { createPiiScanner, PII_ENTITIES, type PiiSpec, piiPendingTail, validatePiiSpec } from './pii.js';
import type { Finding, ScanContext, Scanner } from './scanner.js';

const context: ScanContext = {
  signal: new AbortController().signal,
  requestId: 'req_test',
  keyId: 'key_test',
  teamId: 'team_test',
  model: 'gpt-4o-mini',
  point: 'input',
};

/** The scanner's findings, which it gives at once. */
function scan(scanner: Scanner, texts: string[]): Finding[][] {
  const findings = scanner.scan(texts, context);
  if (findings instanceof Promise) throw new Error('the PII scanner answers at once');
  return findings;
}

/** Each finding of one text as its entity and the text it spans, for a check of `spec` (all entities, US phones by default). */
function found(text: string, spec: Partial<PiiSpec> = {}): Array<[string, string]> {
  const [findings] = scan(createPiiScanner({ entities: [...PII_ENTITIES], defaultPhoneRegion: 'US', ...spec }), [text]);
  return findings!.map((finding) => [finding.entity, text.slice(finding.start, finding.end)]);
}

describe('card', () => {
  it('finds a card number written whole, in groups of spaces or of dashes, and a 15-digit one', () => {
    expect(found('pay with 4111111111111111 today')).toEqual([['card', '4111111111111111']]);
    expect(found('card: 4111 1111 1111 1111, exp 12/29')).toEqual([['card', '4111 1111 1111 1111']]);
    expect(found('card: 5500-0000-0000-0004.')).toEqual([['card', '5500-0000-0000-0004']]);
    expect(found('amex 3782 822463 10005')).toEqual([['card', '3782 822463 10005']]);
  });

  it('leaves a number failing Luhn alone', () => {
    expect(found('card: 4111 1111 1111 1112')).toEqual([]);
  });

  it('takes no 20-digit order number for a card, though its first 16 digits pass Luhn', () => {
    expect(found('order 41111111111111110000 shipped')).toEqual([]);
  });

  it('finds a card followed by more digits in its run, and two cards side by side', () => {
    expect(found('4111 1111 1111 1111 123')).toEqual([['card', '4111 1111 1111 1111']]);
    expect(found('4111111111111111 5500000000000004')).toEqual([
      ['card', '4111111111111111'],
      ['card', '5500000000000004'],
    ]);
  });

  it("takes no run of SSNs, nor a card's digits one by one, for cards", () => {
    expect(found('123-45-6789 123-45-6789 123-45-6789 123-45-6789', { entities: ['card'] })).toEqual([]);
    expect(found('4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1', { entities: ['card'] })).toEqual([]);
  });

  it('takes no decimal for a card', () => {
    expect(found('pi is 3.4111111111111111')).toEqual([]);
  });

  it('gives spans in UTF-16 code units after emoji', () => {
    const text = '💳😀 my card 👉 4111 1111 1111 1111 👈';
    const scanner = createPiiScanner({ entities: ['card'], defaultPhoneRegion: '' });
    const start = text.indexOf('4111');
    expect(scan(scanner, [text])).toEqual([[{ entity: 'card', start, end: start + 19 }]]);
  });
});

describe('iban', () => {
  it('finds IBANs printed with spaces and in the electronic format, letters in the account too', () => {
    expect(found('to DE89 3704 0044 0532 0130 00 please')).toEqual([['iban', 'DE89 3704 0044 0532 0130 00']]);
    expect(found('to GB29 NWBK 6016 1331 9268 19.')).toEqual([['iban', 'GB29 NWBK 6016 1331 9268 19']]);
    expect(found('iban=NL91ABNA0417164300')).toEqual([['iban', 'NL91ABNA0417164300']]);
  });

  it('leaves an IBAN with a wrong check digit, or glued to more characters, alone', () => {
    expect(found('to DE88 3704 0044 0532 0130 00 please', { entities: ['iban'] })).toEqual([]);
    expect(found('NL91ABNA0417164300X', { entities: ['iban'] })).toEqual([]);
  });
});

describe('phone', () => {
  it('finds a national number in the default region and an international one', () => {
    expect(found('call (415) 555-2671 or +44 20 7946 0958', { entities: ['phone'] })).toEqual([
      ['phone', '(415) 555-2671'],
      ['phone', '+44 20 7946 0958'],
    ]);
  });

  it('without a default region finds only numbers written with their +country code', () => {
    expect(found('call (415) 555-2671 or +44 20 7946 0958', { entities: ['phone'], defaultPhoneRegion: '' })).toEqual([['phone', '+44 20 7946 0958']]);
  });

  it('reads a national number in the region the policy gives', () => {
    expect(found('ring 020 7946 0958', { entities: ['phone'], defaultPhoneRegion: 'GB' })).toEqual([['phone', '020 7946 0958']]);
  });

  it('leaves numbers that are not valid in their plan alone', () => {
    expect(found('call +1 555 555 5555 or 12 or +1 +1 +1', { entities: ['phone'] })).toEqual([]);
  });

  it('finds a number among many short runs of digits', () => {
    const text = `${'score 12 to 3, +1 and (4). '.repeat(200)}call +44 20 7946 0958`;
    expect(found(text, { entities: ['phone'] })).toEqual([['phone', '+44 20 7946 0958']]);
  });
});

describe('email', () => {
  it('finds addresses, the trailing full stop of a sentence left out', () => {
    expect(found('write to john.smith+tag@example.co.uk or ANN@Mail.Example.COM.', { entities: ['email'] })).toEqual([
      ['email', 'john.smith+tag@example.co.uk'],
      ['email', 'ANN@Mail.Example.COM'],
    ]);
  });

  it('leaves what is no address alone', () => {
    expect(found('root@localhost, @example.com, a@b, x@-bad-.com, a..b@example.com, me@example.c0m', { entities: ['email'] })).toEqual([]);
  });

  it('reads each @ of a long run of them once', () => {
    const text = `${'@'.repeat(50_000)}a@example.com ${'a@'.repeat(50_000)}`;
    expect(found(text, { entities: ['email'] })).toEqual([['email', 'a@example.com']]);
  });
});

describe('us_ssn', () => {
  it('finds an SSN', () => {
    expect(found('SSN 123-45-6789.', { entities: ['us_ssn'] })).toEqual([['us_ssn', '123-45-6789']]);
  });

  it('leaves numbers in ranges the SSA never issues alone', () => {
    const never = ['000-12-3456', '666-12-3456', '912-34-5678', '123-00-4567', '123-45-0000', '1123-45-6789', '123-45-67890'];
    expect(found(never.join(' '), { entities: ['us_ssn'] })).toEqual([]);
  });
});

describe('uk_nino', () => {
  it('finds NINOs with and without spaces, an O as first letter allowed', () => {
    expect(found('NI AB 12 34 56 C and oa123456d', { entities: ['uk_nino'] })).toEqual([
      ['uk_nino', 'AB 12 34 56 C'],
      ['uk_nino', 'oa123456d'],
    ]);
  });

  it('leaves prefixes HMRC never allocates, and a suffix past D, alone', () => {
    expect(found('QQ123456C GB123456A TN123456A AO123456A DA123456A AB123456E', { entities: ['uk_nino'] })).toEqual([]);
  });
});

describe('ca_sin', () => {
  it('finds a SIN as 3-3-3 with spaces, dashes or nothing', () => {
    expect(found('SIN 046 454 286, 046-454-286 and 046454286', { entities: ['ca_sin'] })).toEqual([
      ['ca_sin', '046 454 286'],
      ['ca_sin', '046-454-286'],
      ['ca_sin', '046454286'],
    ]);
  });

  it('leaves one failing Luhn, or with mixed separators, alone', () => {
    expect(found('SIN 046 454 287 or 046-454 286', { entities: ['ca_sin'] })).toEqual([]);
  });
});

describe('in_aadhaar', () => {
  it('finds an Aadhaar number passing Verhoeff', () => {
    expect(found('Aadhaar 2345 6789 0129 and 499912345674', { entities: ['in_aadhaar'] })).toEqual([
      ['in_aadhaar', '2345 6789 0129'],
      ['in_aadhaar', '499912345674'],
    ]);
  });

  it('leaves one failing Verhoeff, or starting with 0 or 1, alone', () => {
    expect(found('Aadhaar 2345 6789 0128 or 1345 6789 0120', { entities: ['in_aadhaar'] })).toEqual([]);
  });
});

describe('createPiiScanner', () => {
  it('finds card, iban, phone and email when the check names no entity, and no national id', () => {
    const text = 'c 4111111111111111 i DE89370400440532013000 p +44 20 7946 0958 e a@example.com s 123-45-6789';
    expect(found(text, { entities: [] }).map(([entity]) => entity)).toEqual(['card', 'iban', 'phone', 'email']);
  });

  it('finds only the entities the check names', () => {
    expect(found('4111111111111111 123-45-6789', { entities: ['us_ssn'] })).toEqual([['us_ssn', '123-45-6789']]);
  });

  it('makes an IBAN one finding though a card hides in its digits', () => {
    expect(found('DE89 3704 0044 0532 0130 00', { entities: ['card', 'iban'] })).toEqual([['iban', 'DE89 3704 0044 0532 0130 00']]);
  });

  it('scans each text apart, in order', () => {
    const scanner = createPiiScanner({ entities: [], defaultPhoneRegion: '' });
    const findings = scan(scanner, ['nothing', 'a@example.com', '']);
    expect(findings.map((list) => list.map((finding) => finding.entity))).toEqual([[], ['email'], []]);
  });

  it('finds every entity of a large text at its place', async () => {
    const values: Array<[string, string]> = [
      ['card', '4111 1111 1111 1111'],
      ['iban', 'GB29 NWBK 6016 1331 9268 19'],
      ['phone', '+44 20 7946 0958'],
      ['email', 'ann.lee@example.org'],
      ['us_ssn', '123-45-6789'],
      ['uk_nino', 'AB 12 34 56 C'],
      ['ca_sin', '046 454 286'],
      ['in_aadhaar', '2345 6789 0129'],
    ];
    const filler = 'Lorem ipsum dolor sit amet, 42 consectetur (7) adipiscing elit; 2024-05-01. ';
    const chunks: string[] = [];
    const expected: Array<[string, string]> = [];
    while (chunks.join('').length < 200_000)
      for (const value of values) {
        chunks.push(filler.repeat(8), value[1], ' 😀 ');
        expected.push(value);
      }
    const text = chunks.join('');
    // A text this long is read in pieces: the answer comes later.
    const [findings] = await createPiiScanner({ entities: [...PII_ENTITIES], defaultPhoneRegion: 'US' }).scan([text], context);
    expect(findings!.map((finding) => [finding.entity, text.slice(finding.start, finding.end)])).toEqual(expected);
  });

  it('refuses a spec validatePiiSpec refuses', () => {
    expect(() => createPiiScanner({ entities: ['passport'], defaultPhoneRegion: '' })).toThrow('unknown PII entity "passport"');
  });
});

describe('validatePiiSpec', () => {
  it('accepts known entities, no entity, and a region libphonenumber knows or none', () => {
    expect(validatePiiSpec({ entities: [...PII_ENTITIES], defaultPhoneRegion: 'GB' })).toBeUndefined();
    expect(validatePiiSpec({ entities: [], defaultPhoneRegion: '' })).toBeUndefined();
  });

  it('names an unknown entity', () => {
    expect(validatePiiSpec({ entities: ['card', 'passport'], defaultPhoneRegion: '' })).toBe(
      'unknown PII entity "passport" (known: card, iban, phone, email, us_ssn, uk_nino, ca_sin, in_aadhaar)',
    );
  });

  it('names a region that is no ISO 3166 alpha-2 code libphonenumber knows', () => {
    for (const region of ['XX', 'us', 'USA', '001'])
      expect(validatePiiSpec({ entities: [], defaultPhoneRegion: region })).toBe(
        `unknown default phone region "${region}": an ISO 3166 alpha-2 code in capitals, such as US or GB`,
      );
  });
});

describe('piiPendingTail', () => {
  it('holds back half a card, and the whole is found once it is complete', () => {
    expect(piiPendingTail('my card is 4111 1111 11')).toBe(' 4111 1111 11'.length);
    expect(found('my card is 4111 1111 1111 1111')).toEqual([['card', '4111 1111 1111 1111']]);
  });

  it('holds back half a phone number with its brackets and plus sign', () => {
    expect(piiPendingTail('call (415) 555-')).toBe(' (415) 555-'.length);
    expect(piiPendingTail('call +44 20 79')).toBe(' +44 20 79'.length);
  });

  it("holds back an IBAN cut short with its letters, and a NINO's prefix", () => {
    expect(piiPendingTail('to GB29 NWBK 6016 13')).toBe('GB29 NWBK 6016 13'.length);
    expect(piiPendingTail('NI AB 12 34')).toBe('AB 12 34'.length);
  });

  it('holds back half an email address', () => {
    expect(piiPendingTail('write to john.smith@exam')).toBe('john.smith@exam'.length);
  });

  it('holds back nothing after a space that follows words', () => {
    expect(piiPendingTail('The sky is blue. ')).toBe(0);
  });

  it('holds back at most 40 characters of a number', () => {
    expect(piiPendingTail(`x ${'1 '.repeat(100)}`)).toBe(40);
  });
});

describe('a long text', () => {
  it('is read without holding the loop: the same findings, given later, and none once the deadline passes', async () => {
    const scanner = createPiiScanner({ entities: [], defaultPhoneRegion: 'US' });
    const filler = Array.from({ length: 4_000 }, (_, index) => `${2125550000 + index} `).join('');
    const text = `${filler}card 4111 1111 1111 1111, mail a@example.com, call +44 20 7946 0958.`;
    const answer = scanner.scan([text], context);
    expect(answer).toBeInstanceOf(Promise);
    const [findings] = await answer;
    expect(findings!.map((finding) => finding.entity)).toEqual([...Array<string>(4_000).fill('phone'), 'card', 'email', 'phone']);
    const controller = new AbortController();
    controller.abort(new Error('past the deadline'));
    await expect(scanner.scan([text], { ...context, signal: controller.signal })).rejects.toThrow('past the deadline');
  });
});
