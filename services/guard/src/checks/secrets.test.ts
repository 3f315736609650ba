/**
 * The secrets check as a policy sees it: each kind of secret found once, named, with a span that
 * is the secret exactly; prose left alone; and a stream window's end held back while it could
 * still be the start of a secret.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { Finding, ScanContext } from './scanner.js';
import { createSecretsScanner, mergeFindings, secretlintEntity, secretsPendingTail } from './secrets.js';

const context: ScanContext = {
  signal: new AbortController().signal,
  requestId: 'req_test',
  keyId: 'key_test',
  teamId: 'team_test',
  model: 'gpt-4o-mini',
  point: 'input',
};

const scanner = createSecretsScanner();

/** Each finding of one text as its entity and the text it spans. */
async function found(text: string): Promise<Array<[string, string]>> {
  const [findings] = await scanner.scan([text], context);
  return findings!.map((finding) => [finding.entity, text.slice(finding.start, finding.end)]);
}

const OPENAI_KEY = `sk-proj-${'A1b2C3d4E5'.repeat(7)}T3BlbkFJ${'Z9y8X7w6V5'.repeat(7)}`;
const AWS_ACCESS_KEY_ID = 'AKIA2E0A8F3B244C9986';
const AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYQWERTYUIOP';
const GITHUB_TOKEN = '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';
const SLACK_TOKEN = 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const PRIVATE_KEY = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u',
  '+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQz',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

describe('createSecretsScanner', () => {
  it('finds an OpenAI project key as openai_api_key, once, though both rule sets know it', async () => {
    expect(await found(`use ${OPENAI_KEY} for the call`)).toEqual([['openai_api_key', OPENAI_KEY]]);
  });

  it('finds an AWS access key id and its secret access key, the secret without the variable it is assigned to', async () => {
    const text = `aws_access_key_id = ${AWS_ACCESS_KEY_ID}\naws_secret_access_key = "${AWS_SECRET_ACCESS_KEY}"\n`;
    expect(await found(text)).toEqual([
      ['aws_access_key', AWS_ACCESS_KEY_ID],
      ['aws_secret_access_key', AWS_SECRET_ACCESS_KEY],
    ]);
  });

  it('finds a GitHub token and a Slack token by their own names', async () => {
    expect(await found(`gh: ${GITHUB_TOKEN}; slack: ${SLACK_TOKEN}.`)).toEqual([
      ['github_token', GITHUB_TOKEN],
      ['slack_token', SLACK_TOKEN],
    ]);
  });

  it('finds a PEM private key as one block, header to footer', async () => {
    expect(await found(`my key:\n${PRIVATE_KEY}\nthanks`)).toEqual([['private_key', PRIVATE_KEY]]);
  });

  it('finds a JWT, and a bearer token without the word Bearer', async () => {
    expect(await found(`Authorization: Bearer ${JWT}`)).toEqual([['jwt', JWT]]);
    expect(await found('Authorization: Bearer opaque.Token-1234_abcd')).toEqual([['bearer_token', 'opaque.Token-1234_abcd']]);
  });

  it("finds a JSON password field's value, whatever it looks like", async () => {
    expect(await found(JSON.stringify({ user: 'ann', password: 'correct horse battery' }))).toEqual([['secret_field', 'correct horse battery']]);
  });

  it('finds a database connection string with its password', async () => {
    const uri = 'postgres://admin:Sup3rS3cret@db.example.com:5432/app';
    expect(await found(`DATABASE_URL=${uri}`)).toEqual([['database_connection_string', uri]]);
  });

  it('finds nothing in plain prose', async () => {
    const prose = 'Write a haiku about the sky, with task-manager, AKIA and sk- in it; ask for the key and the password.';
    expect(await found(prose)).toEqual([]);
  });

  it('still finds a secret the text says to ignore', async () => {
    expect(await found(`${GITHUB_TOKEN} // secretlint-disable-line`)).toEqual([['github_token', GITHUB_TOKEN]]);
  });

  it('gives spans in UTF-16 code units after emoji and accented text', async () => {
    const text = `😀 clé 🔑: ${GITHUB_TOKEN} 😀 ${OPENAI_KEY}`;
    const [findings] = await scanner.scan([text], context);
    expect(findings).toEqual([
      { entity: 'github_token', start: text.indexOf(GITHUB_TOKEN), end: text.indexOf(GITHUB_TOKEN) + GITHUB_TOKEN.length },
      { entity: 'openai_api_key', start: text.indexOf(OPENAI_KEY), end: text.length },
    ]);
  });

  it('leaves nothing behind on the performance timeline, however many texts it scans', async () => {
    const before = performance.getEntries().length;
    await scanner.scan(
      Array.from({ length: 200 }, (_, index) => `text ${index} with ${GITHUB_TOKEN}`),
      context,
    );
    expect(performance.getEntries().length).toBe(before);
  });

  it("scans each text apart, in the texts' order", async () => {
    const findings = await scanner.scan(['nothing here', `key ${OPENAI_KEY}`, ''], context);
    expect(findings.map((list) => list.map((finding) => finding.entity))).toEqual([[], ['openai_api_key'], []]);
  });

  it('finds every secret of a large text at its place', async () => {
    const filler = 'The quick brown fox jumps over the lazy dog. '.repeat(400);
    const secrets = [GITHUB_TOKEN, OPENAI_KEY, JWT, AWS_ACCESS_KEY_ID];
    const text = secrets.map((secret) => `${filler}${secret} `).join('') + filler;
    expect(text.length).toBeGreaterThan(70_000);
    expect((await found(text)).map(([, secret]) => secret)).toEqual(secrets);
  });
});

describe('mergeFindings', () => {
  it('makes overlapping spans one, covering them all and named by the longest', () => {
    const findings: Finding[] = [
      { entity: 'api_key', start: 10, end: 30 },
      { entity: 'openai_api_key', start: 5, end: 40 },
      { entity: 'jwt', start: 35, end: 50 },
      { entity: 'private_key', start: 60, end: 70 },
    ];
    expect(mergeFindings(findings)).toEqual([
      { entity: 'openai_api_key', start: 5, end: 50 },
      { entity: 'private_key', start: 60, end: 70 },
    ]);
  });

  it('names a span found by a generic and a specific rule by the specific one', () => {
    expect(
      mergeFindings([
        { entity: 'bearer_token', start: 0, end: 40 },
        { entity: 'github_token', start: 0, end: 40 },
      ]),
    ).toEqual([{ entity: 'github_token', start: 0, end: 40 }]);
  });
});

describe('secretlintEntity', () => {
  it('reads a message id as a readable entity', () => {
    expect(secretlintEntity('AWSSecretAccessKey')).toBe('aws_secret_access_key');
    expect(secretlintEntity('GITHUB_TOKEN')).toBe('github_token');
    expect(secretlintEntity('PostgreSQLConnection')).toBe('database_connection_string');
    expect(secretlintEntity('PrivateKey')).toBe('private_key');
  });
});

describe('secretsPendingTail', () => {
  it('holds back half a key, and the scan of the whole finds it once it is complete', async () => {
    const text = `here is my key ${OPENAI_KEY.slice(0, 30)}`;
    expect(secretsPendingTail(text)).toBe(30);
    expect(await found(text.slice(0, -30) + OPENAI_KEY)).toEqual([['openai_api_key', OPENAI_KEY]]);
  });

  it('holds back an unterminated private key block from its header, and lets it go once it ends', () => {
    const open = `key:\n${PRIVATE_KEY.slice(0, 120)}`;
    expect(secretsPendingTail(open)).toBe(120);
    expect(secretsPendingTail(`key:\n${PRIVATE_KEY}\nthat was the key`)).toBe(3);
    expect(secretsPendingTail('key:\n-----BEGIN RSA PRIV')).toBe('-----BEGIN RSA PRIV'.length);
  });

  it('holds back the context a rule needs before a token: Bearer, an assignment, an open secret field', () => {
    expect(secretsPendingTail('Authorization: Bearer ')).toBe('Bearer '.length);
    expect(secretsPendingTail('Authorization: Bearer abc')).toBe('Bearer abc'.length);
    expect(secretsPendingTail('aws_secret_access_key = "wJalr')).toBe('aws_secret_access_key = "wJalr'.length);
    expect(secretsPendingTail('{"user": "ann", "password": "correct hor')).toBe('"password": "correct hor'.length);
  });

  it('holds back only the last word of prose, and nothing after a finished sentence and a space', () => {
    expect(secretsPendingTail('The sky is blue.')).toBe('blue.'.length);
    expect(secretsPendingTail('The sky is blue. ')).toBe(0);
  });

  it('holds back at most 512 characters of a token', () => {
    expect(secretsPendingTail(`x ${'a'.repeat(2000)}`)).toBe(512);
  });
});
