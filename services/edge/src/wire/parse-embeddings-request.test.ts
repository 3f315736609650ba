import { describe, expect, it } from 'vitest';
import { thrownBy } from '@gateway/testing';
import { RequestError } from '../request-error.js';
import { MAX_EMBEDDING_INPUTS, parseEmbeddingsRequest } from './parse-embeddings-request.js';
import { floatValues } from './embeddings-wire.js';

const refusal = (body: unknown) => {
  const error = thrownBy(RequestError, () => parseEmbeddingsRequest(body as never));
  return { status: error.status, param: error.param, code: error.code, message: error.message };
};

describe('parseEmbeddingsRequest', () => {
  it('takes each of OpenAI input shapes', () => {
    expect(parseEmbeddingsRequest({ model: 'm', input: 'hello' }).embeddings).toEqual({
      texts: ['hello'],
      tokenArrays: [],
      dimensions: 0,
      user: '',
      encoding: 'float',
    });
    expect(parseEmbeddingsRequest({ model: 'm', input: ['a', 'b'] }).embeddings.texts).toEqual(['a', 'b']);
    expect(parseEmbeddingsRequest({ model: 'm', input: [1, 2, 3] }).embeddings.tokenArrays).toEqual([[1, 2, 3]]);
    expect(parseEmbeddingsRequest({ model: 'm', input: [[1], [2, 3]] }).embeddings.tokenArrays).toEqual([[1], [2, 3]]);
  });

  it('reads encoding_format, dimensions and user, and never falls back or streams', () => {
    const parsed = parseEmbeddingsRequest({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'base64', dimensions: 256, user: 'u-1' });
    expect(parsed.embeddings).toMatchObject({ encoding: 'base64', dimensions: 256, user: 'u-1' });
    expect(parsed).toMatchObject({ request: { model: 'text-embedding-3-small', messages: [] }, stream: false, fallbacks: false });
    expect(parseEmbeddingsRequest({ model: 'm', input: 'x', encoding_format: null, dimensions: null, user: null }).embeddings).toMatchObject({
      encoding: 'float',
      dimensions: 0,
      user: '',
    });
  });

  it('takes 2048 inputs and a single token array of any length', () => {
    expect(parseEmbeddingsRequest({ model: 'm', input: Array.from({ length: MAX_EMBEDDING_INPUTS }, () => 'x') }).embeddings.texts).toHaveLength(2048);
    expect(parseEmbeddingsRequest({ model: 'm', input: Array.from({ length: 5000 }, () => 7) }).embeddings.tokenArrays[0]).toHaveLength(5000);
  });

  it('refuses bad input with a 400 naming the field', () => {
    expect(refusal({ model: 'm' })).toMatchObject({ status: 400, param: 'input', code: 'missing_required_parameter' });
    expect(refusal({ model: 'm', input: '' })).toMatchObject({ param: 'input', code: 'empty_string' });
    expect(refusal({ model: 'm', input: [] })).toMatchObject({ param: 'input', code: 'empty_array' });
    expect(refusal({ model: 'm', input: 42 })).toMatchObject({ param: 'input', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: [{}] })).toMatchObject({ param: 'input[0]', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: ['a', 3] })).toMatchObject({ param: 'input[1]', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: ['a', ''] })).toMatchObject({ param: 'input[1]', code: 'empty_string' });
    expect(refusal({ model: 'm', input: Array.from({ length: 2049 }, () => 'x') })).toEqual({
      status: 400,
      param: 'input',
      code: 'array_above_max_length',
      message: "Invalid 'input': 2049 inputs. Expected at most 2048 inputs per request.",
    });
  });

  it('refuses token ids that are not non-negative integers, and an empty token array', () => {
    expect(refusal({ model: 'm', input: [1, 2.5] })).toMatchObject({ param: 'input[1]', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: [1, '2'] })).toMatchObject({ param: 'input[1]', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: [[1], [-1]] })).toMatchObject({ param: 'input[1][0]', code: 'invalid_value' });
    expect(refusal({ model: 'm', input: [[1], []] })).toMatchObject({ param: 'input[1]', code: 'empty_array' });
    expect(refusal({ model: 'm', input: [[1], 'a'] })).toMatchObject({ param: 'input[1]', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: [2 ** 31] })).toMatchObject({ param: 'input[0]', code: 'invalid_value' });
  });

  it('refuses bad dimensions, encoding_format, user, unknown fields, no model and auto', () => {
    expect(refusal({ model: 'm', input: 'x', dimensions: 0 })).toMatchObject({ param: 'dimensions', code: 'invalid_value' });
    expect(refusal({ model: 'm', input: 'x', dimensions: 1.5 })).toMatchObject({ param: 'dimensions', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: 'x', encoding_format: 'int8' })).toEqual({
      status: 400,
      param: 'encoding_format',
      code: 'invalid_value',
      message: "Invalid value for 'encoding_format': 'int8'. Supported values are: 'float', 'base64'.",
    });
    expect(refusal({ model: 'm', input: 'x', encoding_format: 1 })).toMatchObject({ param: 'encoding_format', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: 'x', user: 5 })).toMatchObject({ param: 'user', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: 'x', stream: true })).toMatchObject({ param: 'stream', code: 'unknown_parameter' });
    expect(refusal({ input: 'x' })).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
    expect(refusal({ model: 'auto', input: 'x' })).toMatchObject({ param: 'model', code: 'invalid_value' });
    expect(refusal(['x'])).toMatchObject({ param: null, code: 'invalid_body' });
  });
});

describe('floatValues', () => {
  it('writes each little-endian float32 as the JSON number of its value, and no NaN', () => {
    const bytes = new Uint8Array(new Float32Array([1, -0.5, 0.1, Number.NaN]).buffer);
    const values = JSON.parse(`[${floatValues(bytes)}]`) as number[];
    expect(values).toEqual([1, -0.5, Math.fround(0.1), 0]);
  });
});
