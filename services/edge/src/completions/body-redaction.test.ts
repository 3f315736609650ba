/**
 * What the request log keeps of a body: each kind of secret replaced, the rest left as it was, and
 * the cap cutting at a UTF-8 character boundary with a marker counting what was cut.
 */
import { describe, expect, it } from 'vitest';
import { capUtf8, keptBody, REDACTED, redactSecrets } from './body-redaction.js';

/** A prompt saying `secret`, as a chat completions body carries it. */
const prompt = (content: string) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

describe('redactSecrets', () => {
  const secrets: Array<[string, string]> = [
    ['an OpenAI key', 'sk-proj-Abcdefghij0123456789xyzXYZ'],
    ['an Anthropic key', 'sk-ant-api03-Abcdefghij0123456789_xyz-XYZ'],
    ["the gateway's own key", `br-${'q1'.repeat(20)}`],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE'],
    ['a temporary AWS access key id', 'ASIAIOSFODNN7EXAMPLE'],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ];
  for (const [name, secret] of secrets)
    it(`redacts ${name} and keeps the words around it`, () => {
      const kept = redactSecrets(prompt(`my key is ${secret}, please check it`));
      expect(kept).not.toContain(secret);
      expect(JSON.parse(kept).messages[0].content).toBe(`my key is ${REDACTED}, please check it`);
    });

  it('redacts a Bearer token but keeps the word Bearer', () => {
    const kept = redactSecrets(prompt('curl -H "Authorization: Bearer abc.DEF-123_456~xyz" https://x'));
    expect(JSON.parse(kept).messages[0].content).toBe(`curl -H "Authorization: Bearer ${REDACTED}" https://x`);
  });

  it('redacts a PEM private key block whole, its JSON-escaped newlines included', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq9xZ==\n-----END RSA PRIVATE KEY-----';
    const kept = redactSecrets(prompt(`here:\n${pem}\nthanks`));
    expect(JSON.parse(kept).messages[0].content).toBe(`here:\n${REDACTED}\nthanks`);
    const openssh = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----';
    expect(redactSecrets(prompt(openssh))).not.toContain('b3BlbnNzaC1rZXktdjE');
  });

  it('redacts the value of password, api_key, apiKey, client_secret and access_token fields, whatever the value looks like', () => {
    const body = JSON.stringify({
      password: 'hunter2',
      api_key: 'plain words',
      apiKey: 'x"y',
      nested: { client_secret: 'abc', 'X-Access-Token': 'tok' },
      max_tokens: 100,
      secretary: 'kept',
    });
    const kept = JSON.parse(redactSecrets(body));
    expect(kept.password).toBe(REDACTED);
    expect(kept.api_key).toBe(REDACTED);
    expect(kept.apiKey).toBe(REDACTED);
    expect(kept.nested).toEqual({ client_secret: REDACTED, 'X-Access-Token': REDACTED });
    expect(kept.max_tokens).toBe(100);
    expect(kept.secretary).toBe('kept');
  });

  it('redacts secret fields inside a JSON string (a tool call’s arguments)', () => {
    const body = JSON.stringify({ tool_calls: [{ function: { name: 'login', arguments: JSON.stringify({ user: 'ann', password: 'p@ss"w0rd' }) } }] });
    const kept = JSON.parse(redactSecrets(body));
    expect(JSON.parse(kept.tool_calls[0].function.arguments)).toEqual({ user: 'ann', password: REDACTED });
  });

  it('leaves a body without secrets as it was', () => {
    const body = prompt('Write a haiku about the sky, with task-manager and AKIA in it; ask for the key.');
    expect(redactSecrets(body)).toBe(body);
  });
});

describe('capUtf8', () => {
  it('keeps a body that fits whole', () => {
    expect(capUtf8('héllo', 6)).toEqual({ text: 'héllo', truncatedBytes: 0 });
  });

  it('cuts to the cap with a marker counting the bytes cut', () => {
    const text = 'a'.repeat(1000);
    const kept = capUtf8(text, 100);
    expect(Buffer.byteLength(kept.text)).toBeLessThanOrEqual(100);
    expect(kept.text).toMatch(/^a+…\[truncated (\d+) bytes\]$/);
    const keptLength = kept.text.indexOf('…');
    expect(kept.truncatedBytes).toBe(1000 - keptLength);
    expect(kept.text).toContain(`[truncated ${kept.truncatedBytes} bytes]`);
  });

  it('never cuts inside a character, whatever the width of the characters at the cap', () => {
    for (const character of ['é', '€', '😀']) {
      const text = character.repeat(200);
      for (let cap = 40; cap < 48; cap += 1) {
        const kept = capUtf8(text, cap);
        expect(Buffer.byteLength(kept.text)).toBeLessThanOrEqual(cap);
        expect(kept.text).not.toContain('\uFFFD');
        const body = kept.text.slice(0, kept.text.indexOf('…'));
        expect(body).toBe(character.repeat([...body].length));
        expect(Buffer.byteLength(body) + kept.truncatedBytes).toBe(Buffer.byteLength(text));
      }
    }
  });
});

describe('keptBody', () => {
  it('redacts before it caps: a secret at the cap is never kept in part', () => {
    const secret = 'sk-ant-api03-Abcdefghij0123456789_xyz-XYZ';
    const text = `${'x'.repeat(60)} ${secret}`;
    const kept = keptBody(text, 80);
    expect(kept.text).not.toContain('sk-ant');
    expect(kept.text.startsWith('x'.repeat(60))).toBe(true);
  });
});
