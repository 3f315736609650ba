/**
 * The scanner of each kind of check, built once per policy version (compiled-policies.ts), never
 * per call: RE2 programs, PII validators, secret rules and outside services' clients are made
 * here. An outside check's credential is opened from its seal only here, in memory.
 */
import type { SecretCipher } from '@gateway/redis';
import type { StoredCheck } from '../policies/policy.js';
import { createExternalScanner } from './external/index.js';
import { createLimitsScanner } from './limits.js';
import { createPatternsScanner } from './patterns.js';
import { createPiiScanner } from './pii.js';
import type { Scanner } from './scanner.js';
import { createSecretsScanner } from './secrets.js';

let secrets: Scanner | undefined;

/** The scanner of a stored (validated) check. */
export function createScanner(check: StoredCheck, cipher: SecretCipher): Scanner {
  switch (check.kind) {
    case 'secrets':
      // Its rules are the same for every policy: one scanner serves all.
      secrets ??= createSecretsScanner();
      return secrets;
    case 'pii':
      return createPiiScanner({ entities: check.pii?.entities ?? [], defaultPhoneRegion: check.pii?.default_phone_region ?? '' });
    case 'patterns':
      return createPatternsScanner(check.patterns ?? { words: [], patterns: [], entity: '' });
    case 'limits':
      return createLimitsScanner(check.limits ?? { max_chars: 0, allowed_scripts: [] });
    case 'external': {
      const external = check.external!;
      const credential = external.credential_sealed ? (cipher.open(external.credential_sealed).credential ?? '') : '';
      return createExternalScanner({
        service: external.service,
        baseUrl: external.base_url,
        credential,
        settings: external.settings,
        deadlineMs: external.deadline_ms,
      });
    }
  }
}
