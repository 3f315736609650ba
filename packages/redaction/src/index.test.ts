/**
 * The secret rules as the request log and the guard see them: each kind of secret found by the
 * rule of its entity with the secret alone as the match, and `redactSecrets` replacing exactly
 * those matches.
 */
import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, SECRET_RULES } from './index.js';

/** Every match of every rule in `text`: entity and matched text, in the rules' order. */
function matches(text: string): Array<[string, string]> {
  return SECRET_RULES.flatMap((rule) => [...text.matchAll(rule.pattern)].map((match): [string, string] => [rule.entity, match[0]]));
}

describe('SECRET_RULES', () => {
  const secrets: Array<[string, string]> = [
    ['openai_api_key', 'sk-proj-Abcdefghij0123456789xyzXYZ'],
    ['openai_api_key', 'sk-svcacct-Abcdefghij0123456789xyz'],
    ['openai_api_key', `sk-${'A1b2'.repeat(5)}T3BlbkFJ${'c3D4'.repeat(5)}`],
    ['anthropic_api_key', 'sk-ant-api03-Abcdefghij0123456789_xyz-XYZ'],
    ['api_key', 'sk-0123456789abcdef0123456789abcdef'],
    ['api_key', `br-${'q1'.repeat(20)}`],
    ['aws_access_key', 'AKIAIOSFODNN7EXAMPLE'],
    ['aws_access_key', 'ASIAIOSFODNN7EXAMPLE'],
    ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ];
  for (const [entity, secret] of secrets)
    it(`finds ${secret.slice(0, 12)}… as ${entity}, the key alone`, () => {
      expect(matches(`my key is ${secret}, please check it`)).toEqual([[entity, secret]]);
    });

  it('finds a Bearer token without the word Bearer', () => {
    expect(matches('Authorization: Bearer abc.DEF-123_456~xyz')).toEqual([['bearer_token', 'abc.DEF-123_456~xyz']]);
    expect(matches('bearer    abcdefgh12')).toEqual([['bearer_token', 'abcdefgh12']]);
    expect(matches('Bearer short')).toEqual([]);
  });

  it('finds a PEM private key block whole, and a block after an unterminated header', () => {
    const pem = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIm\n-----END EC PRIVATE KEY-----';
    expect(matches(`key:\n${pem}\n`)).toEqual([['private_key', pem]]);
    expect(matches(`-----BEGIN RSA PRIVATE KEY-----\ncut here\n${pem}`)).toEqual([['private_key', pem]]);
    // A block's kind must match at both ends.
    expect(matches('-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----')).toEqual([]);
  });

  it('finds many unterminated private key headers to be no key at all', () => {
    const text = `${'-----BEGIN RSA PRIVATE KEY-----\n'.repeat(5000)}MIIE`;
    expect(matches(text)).toEqual([]);
  });

  it("finds a secret field's value, between its quotes, in JSON and escaped inside a JSON string", () => {
    expect(matches('{"client_secret": "s3cr3t value", "secretary": "kept"}')).toEqual([['secret_field', 's3cr3t value']]);
    const escaped = JSON.stringify({ arguments: JSON.stringify({ password: 'p@ss"w0rd' }) });
    expect(matches(escaped)).toEqual([['secret_field', String.raw`p@ss\\\"w0rd`]]);
  });

  it('finds nothing in prose with the prefixes in it', () => {
    expect(matches('Write a haiku about task-manager, AKIA, sk- and the Bearer of bad news.')).toEqual([]);
  });
});

describe('redactSecrets', () => {
  it('replaces each secret and keeps what surrounds it', () => {
    const text = '{"password":"hunter2","note":"Bearer abcdefgh1234 and sk-ant-api03-Abcdefghij0123456789"}';
    expect(redactSecrets(text)).toBe(`{"password":"${REDACTED}","note":"Bearer ${REDACTED} and ${REDACTED}"}`);
  });
});
