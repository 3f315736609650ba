/**
 * A well-kept JSON Schema validator (ajv, draft 2020-12, with formats) for tests, so "valid" means
 * what JSON Schema says and not what the generator believes. Test-only: excluded from the build.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** A validator with every standard format; unknown keywords are ignored rather than fatal. */
export function schemaValidator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}
