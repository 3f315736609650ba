import { describe, expect, it } from 'vitest';
import { toGeminiSchema, UnconvertibleSchemaError } from './to-gemini-schema.js';

describe('toGeminiSchema', () => {
  it('keeps the subset Gemini accepts and drops every other keyword', () => {
    expect(
      toGeminiSchema({
        $schema: 'http://json-schema.org/draft-07/schema#',
        $id: 'https://example.com/order',
        type: 'object',
        title: 'Order',
        additionalProperties: false,
        patternProperties: { '^x-': { type: 'string' } },
        properties: {
          sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$', minLength: 5, maxLength: 12, format: 'uuid' },
          quantity: { type: 'integer', minimum: 1, maximum: 99, exclusiveMinimum: 0, multipleOf: 1, format: 'int32' },
          price: { type: 'number', format: 'double', examples: [9.99] },
          tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 5, uniqueItems: true },
          placed_at: { type: 'string', format: 'date-time', readOnly: true },
        },
        required: ['sku', 'quantity', 'not_a_property'],
        not: { required: ['coupon'] },
      }),
    ).toEqual({
      type: 'OBJECT',
      title: 'Order',
      properties: {
        sku: { type: 'STRING', pattern: '^[A-Z]{3}-\\d+$', minLength: 5, maxLength: 12 },
        quantity: { type: 'INTEGER', minimum: 1, maximum: 99, format: 'int32' },
        price: { type: 'NUMBER', format: 'double' },
        tags: { type: 'ARRAY', items: { type: 'STRING' }, minItems: 1, maxItems: 5 },
        placed_at: { type: 'STRING', format: 'date-time' },
      },
      required: ['sku', 'quantity'],
    });
  });

  it('writes nullability, const, oneOf and allOf the way Gemini reads them', () => {
    expect(toGeminiSchema({ anyOf: [{ type: 'string' }, { type: 'null' }] })).toEqual({ type: 'STRING', nullable: true });
    expect(toGeminiSchema({ type: ['integer', 'null'] })).toEqual({ type: 'INTEGER', nullable: true });
    expect(toGeminiSchema({ const: 'celsius' })).toEqual({ type: 'STRING', format: 'enum', enum: ['celsius'] });
    expect(toGeminiSchema({ type: 'integer', enum: [1, 2, 3] })).toEqual({ type: 'INTEGER' });
    expect(toGeminiSchema({ oneOf: [{ type: 'string' }, { type: 'number' }] })).toEqual({ anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] });
    expect(toGeminiSchema({ type: ['string', 'number'], description: 'an id' })).toEqual({
      anyOf: [
        { type: 'STRING', description: 'an id' },
        { type: 'NUMBER', description: 'an id' },
      ],
    });
    expect(
      toGeminiSchema({
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { properties: { b: { type: 'boolean' } }, required: ['b'] },
        ],
      }),
    ).toEqual({ type: 'OBJECT', properties: { a: { type: 'STRING' }, b: { type: 'BOOLEAN' } }, required: ['a', 'b'] });
  });

  it('inlines local $refs and refuses recursive or remote ones', () => {
    expect(
      toGeminiSchema({
        type: 'object',
        properties: { home: { $ref: '#/definitions/address', description: 'where they live' } },
        definitions: { address: { type: 'object', properties: { city: { type: 'string' } } } },
      }),
    ).toEqual({ type: 'OBJECT', properties: { home: { type: 'OBJECT', description: 'where they live', properties: { city: { type: 'STRING' } } } } });
    const recursive = {
      $ref: '#/$defs/node',
      $defs: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
    };
    expect(() => toGeminiSchema(recursive)).toThrow('the schema is recursive');
    expect(() => toGeminiSchema({ type: 'object', properties: { children: { type: 'array', items: { $ref: '#' } } } })).toThrow('the schema is recursive');
    expect(() => toGeminiSchema({ $ref: 'https://example.com/schema.json' })).toThrow(UnconvertibleSchemaError);
  });
});
