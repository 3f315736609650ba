/** Stand-in until the PII validators land: cards with a Luhn check only. */
import type { Finding, Scanner } from './scanner.js';

export const PII_ENTITIES = ['card', 'iban', 'phone', 'email', 'us_ssn', 'uk_nino', 'ca_sin', 'in_aadhaar'] as const;

export function validatePiiSpec(spec: { entities: string[]; defaultPhoneRegion: string }): string | undefined {
  const unknown = spec.entities.find((entity) => !(PII_ENTITIES as readonly string[]).includes(entity));
  return unknown ? `"${unknown}" is not a PII entity.` : undefined;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

export function createPiiScanner(_spec: { entities: string[]; defaultPhoneRegion: string }): Scanner {
  return {
    scan: (texts) =>
      texts.map((text) => {
        const found: Finding[] = [];
        for (const match of text.matchAll(/(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])/g)) {
          if (luhn(match[0].replace(/[ -]/g, ''))) found.push({ entity: 'card', start: match.index, end: match.index + match[0].length });
        }
        return found;
      }),
  };
}
