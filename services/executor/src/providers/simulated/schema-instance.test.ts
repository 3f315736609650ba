import { describe, expect, it } from 'vitest';
import { schemaValidator } from '../../testing/schema-validator.js';
import { generateSchemaInstance, type JsonSchema } from './schema-instance.js';
import { SeededRandom } from './seeded-random.js';
import schemas from './fixtures/tool-schemas.json' with { type: 'json' };

describe('generateSchemaInstance', () => {
  const ajv = schemaValidator();

  it.each(Object.entries(schemas))('produces values valid against the %s schema for many seeds', (_name, schema) => {
    const validate = ajv.compile(schema);
    for (let seed = 0; seed < 200; seed += 1) {
      const value = generateSchemaInstance(schema as JsonSchema, new SeededRandom(`seed-${seed}`));
      expect(validate(value), `seed ${seed}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });

  it('is deterministic for a seed and varies across seeds', () => {
    const schema = schemas.book_meeting as JsonSchema;
    const first = JSON.stringify(generateSchemaInstance(schema, new SeededRandom('a')));
    expect(JSON.stringify(generateSchemaInstance(schema, new SeededRandom('a')))).toBe(first);
    const others = new Set(Array.from({ length: 10 }, (_, seed) => JSON.stringify(generateSchemaInstance(schema, new SeededRandom(`b${seed}`)))));
    expect(others.size).toBeGreaterThan(5);
  });

  it('honours const, enums of any type and numeric ranges at their edges', () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: {
        version: { const: 2 },
        level: { enum: [1, 'two', null] },
        ratio: { type: 'number', minimum: 0.5, maximum: 0.5 },
        count: { type: 'integer', exclusiveMinimum: 9, exclusiveMaximum: 11 },
      },
      required: ['version', 'level', 'ratio', 'count'],
    };
    const value = generateSchemaInstance(schema, new SeededRandom('edges')) as Record<string, unknown>;
    expect(value.version).toBe(2);
    expect([1, 'two', null]).toContain(value.level);
    expect(value.ratio).toBe(0.5);
    expect(value.count).toBe(10);
  });

  it('bounds its work on schemas that multiply: nested minItems, a huge minLength, a required self-reference', () => {
    const nested: JsonSchema = {
      type: 'array',
      minItems: 20,
      items: {
        type: 'array',
        minItems: 20,
        items: { type: 'array', minItems: 20, items: { type: 'array', minItems: 20, items: { type: 'array', minItems: 20, items: { type: 'integer' } } } },
      },
    };
    const long: JsonSchema = { type: 'string', minLength: 1_000_000_000 };
    const cyclic: JsonSchema = {
      $defs: { node: { type: 'object', required: ['next'], properties: { next: { $ref: '#/$defs/node' } } } },
      $ref: '#/$defs/node',
    };
    for (const schema of [nested, long, cyclic]) {
      const start = performance.now();
      const json = JSON.stringify(generateSchemaInstance(schema, new SeededRandom('hostile')));
      // 3.2 million values for the first: 7 s on an idle machine before the budget. The output's size
      // below is what proves the budget; the time is a hang guard a loaded machine cannot fail.
      expect(performance.now() - start).toBeLessThan(5_000);
      expect(json.length).toBeLessThan(2_000_000);
    }
  });

  it('merges a schema of many allOf parts in one pass', () => {
    const parts = Array.from({ length: 20_000 }, (_, index) => ({ properties: { [`p${index}`]: { const: index } }, required: [`p${index}`] }));
    const start = performance.now();
    const value = generateSchemaInstance({ type: 'object', allOf: parts }, new SeededRandom('parts')) as Record<string, unknown>;
    // A hang guard (one pass takes milliseconds; merging part by part, 200 million steps).
    expect(performance.now() - start).toBeLessThan(5_000);
    expect(value.p0).toBe(0);
    expect(value.p19999).toBe(19_999);
  });
});
