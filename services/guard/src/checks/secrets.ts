/**
 * The secrets check: the request log's redaction rules (@gateway/redaction) and secretlint's
 * recommended rules (cloud keys, tokens, private keys, connection strings), each text scanned by
 * both and the spans they find merged, so one secret is one finding. Secretlint reports a rule's
 * message id (`AWSSecretAccessKey`, `GITHUB_TOKEN`); the finding's entity is its readable name
 * (`aws_secret_access_key`, `github_token`).
 *
 * Secretlint's comment directives (`secretlint-disable`) are turned off: a prompt that says them
 * must not hide its secrets. Its profiler is turned off too (see `quietProfiler`).
 */
import { SECRET_FIELD_NAME, SECRET_RULES } from '@gateway/redaction';
import { lintSource } from '@secretlint/core';
import { secretLintProfiler } from '@secretlint/profiler';
import { creator as recommendedPreset } from '@secretlint/secretlint-rule-preset-recommend';
import type { Finding, Scanner } from './scanner.js';

/**
 * @secretlint/profiler 12 marks every lint of every rule on the process's performance timeline
 * and keeps each entry in arrays it never empties: in a process that lints every request that is
 * memory without bound and an observer whose cost grows with it (secretlint/secretlint#1633,
 * #1653; made opt-in upstream by #1673, after 12). The guard never reads a profile, so the one
 * profiler instance, shared with @secretlint/core, marks nothing.
 */
function quietProfiler(): void {
  secretLintProfiler.mark = () => undefined;
}
quietProfiler();

/** Secretlint's configuration: the recommended preset without its comment directives. */
const SECRETLINT_CONFIG = {
  rules: [
    {
      id: '@secretlint/secretlint-rule-preset-recommend',
      rule: recommendedPreset,
      rules: [{ id: '@secretlint/secretlint-rule-filter-comments', disabled: true }],
    },
  ],
};

/** Secretlint message ids whose readable name is not their snake case. */
const SECRETLINT_ENTITIES: Readonly<Record<string, string>> = {
  AWSAccessKeyID: 'aws_access_key',
  AWSAccountID: 'aws_account_id',
  PrivateKeyP12: 'gcp_service_account_key',
  PrivateKeyJSON: 'gcp_service_account_key',
  PackageJSON_xOauthToken: 'npm_token',
  Npmrc_authToken: 'npm_token',
  NPM_ACCESS_TOKEN: 'npm_token',
  IncomingWebhook: 'slack_webhook_url',
  BasicAuth: 'basic_auth_credential',
  OPENAI_TOKEN: 'openai_api_key',
  SENDGRID_KEY: 'sendgrid_api_key',
  SHOPIFY_KEY: 'shopify_token',
  OPS_TOKEN: 'onepassword_service_account_token',
  MongoDBConnection: 'database_connection_string',
  MySQLConnection: 'database_connection_string',
  PostgreSQLConnection: 'database_connection_string',
};

/** The entity of a secretlint message: the table's name, else the message id in snake case. */
export function secretlintEntity(messageId: string): string {
  return (
    SECRETLINT_ENTITIES[messageId] ??
    messageId
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
      .toLowerCase()
  );
}

/** Entities a more specific one wins over when both find the same span. */
const GENERIC_ENTITIES = new Set(['secret_field', 'bearer_token', 'api_key']);

/** The redaction rules' findings in one text (empty matches, an empty field value, are none). */
function ruleFindings(text: string): Finding[] {
  const findings: Finding[] = [];
  for (const rule of SECRET_RULES)
    for (const match of text.matchAll(rule.pattern))
      if (match[0].length > 0) findings.push({ entity: rule.entity, start: match.index, end: match.index + match[0].length });
  return findings;
}

/**
 * Secretlint's findings in one text. A message's range is where its rule matched; the secret is
 * the string in its data (`KEY`, `TOKEN`, `URI`). Where the two differ the span is the secret's:
 * the AWS rule reports its match's start with the key's length, so the range would cover the
 * variable's name and half the key.
 */
async function secretlintFindings(text: string): Promise<Finding[]> {
  const result = await lintSource({
    source: { content: text, filePath: 'text', contentType: 'text' },
    options: { config: SECRETLINT_CONFIG, noPhysicFilePath: true },
  });
  return result.messages.map((message) => {
    let [start, end] = message.range;
    const secrets = Object.values(message.data ?? {}).filter((value): value is string => typeof value === 'string' && value.length > 0);
    if (!secrets.includes(text.slice(start, end)))
      for (const secret of secrets) {
        const at = text.indexOf(secret, start);
        if (at >= 0 && at <= end) {
          [start, end] = [at, at + secret.length];
          break;
        }
      }
    return { entity: secretlintEntity(message.messageId), start, end };
  });
}

/**
 * Overlapping findings as one: the union of their spans, named by the longest (a specific entity
 * before a generic one when they are as long), so a mask covers every character any rule found.
 */
export function mergeFindings(findings: readonly Finding[]): Finding[] {
  const sorted = [...findings].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Finding[] = [];
  let longest: Finding | undefined;
  for (const finding of sorted) {
    const last = merged.at(-1);
    if (last && longest && finding.start < last.end) {
      if (isLonger(finding, longest)) longest = finding;
      last.end = Math.max(last.end, finding.end);
      last.entity = longest.entity;
      continue;
    }
    longest = finding;
    merged.push({ ...finding });
  }
  return merged;
}

/** Whether `a` names a merged span before `b`. */
function isLonger(a: Finding, b: Finding): boolean {
  const difference = a.end - a.start - (b.end - b.start);
  if (difference !== 0) return difference > 0;
  return GENERIC_ENTITIES.has(b.entity) && !GENERIC_ENTITIES.has(a.entity);
}

/** The findings of one text, in order of start. */
async function scanText(text: string): Promise<Finding[]> {
  if (text.length === 0) return [];
  const fromSecretlint = await secretlintFindings(text);
  return mergeFindings([...ruleFindings(text), ...fromSecretlint]);
}

/** Most of an unterminated private key block held back: more than any key's PEM (RSA-16384's is about 12 500 characters). */
const MAX_HELD_PRIVATE_KEY = 16_384;
/** Most of a trailing token (or open secret field) held back. */
const MAX_HELD_TOKEN = 512;

/** A private key block's header. */
const PRIVATE_KEY_HEADER = /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----/g;
/** A private key block's end. */
const PRIVATE_KEY_FOOTER = /-----END (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----/;
/** A header cut by the window's end (`-----BEGIN RSA PRIV`); shorter than `-----BEGIN ` is a token run. */
const PARTIAL_HEADER = /-----BEGIN [A-Z ]*-{0,4}$/;
/** A secret field whose value is still open at the end, as JSON or escaped inside a JSON string. */
const OPEN_FIELD = new RegExp(
  String.raw`(?:"${SECRET_FIELD_NAME}"\s*(?::\s*(?:"(?:[^"\\]|\\.)*\\?)?)?|\\"${SECRET_FIELD_NAME}\\"\s*(?::\s*(?:\\"(?:[^"\\]|\\\\\\["\\]|\\[^"\\])*\\{0,3})?)?)$`,
  'i',
);
/** The characters a token is made of. */
const TOKEN_CHARACTER = /[A-Za-z0-9_\-+/=.~:]/;
/** What a token's rule needs before it: `Bearer `, an assignment (`AWS_SECRET_ACCESS_KEY = "`), an opening quote. */
const TOKEN_CONTEXT = /(?:\bBearer\s+|(?:\\?["'])?[A-Za-z0-9_-]+\\?["']?\s*(?::|=>|=)\s*\\?["']?|\\?["'])$/i;

/**
 * How much of the end of `text` could be a secret not yet complete: an unterminated private key
 * block from its header; else the longest of an open secret field (from its name's quote) and the
 * trailing run of token characters with the context a rule needs before it.
 */
export function secretsPendingTail(text: string): number {
  const keyWindow = text.slice(-MAX_HELD_PRIVATE_KEY);
  let header: RegExpExecArray | undefined;
  for (const match of keyWindow.matchAll(PRIVATE_KEY_HEADER)) header = match;
  if (header && !PRIVATE_KEY_FOOTER.test(keyWindow.slice(header.index))) return keyWindow.length - header.index;
  const end = text.slice(-2 * MAX_HELD_TOKEN);
  const partial = PARTIAL_HEADER.exec(end.slice(-64));
  let held = partial ? partial[0].length : 0;
  const field = OPEN_FIELD.exec(end);
  if (field) held = Math.max(held, Math.min(field[0].length, MAX_HELD_TOKEN));
  let run = 0;
  while (run < MAX_HELD_TOKEN && run < text.length && TOKEN_CHARACTER.test(text[text.length - 1 - run]!)) run += 1;
  const context = TOKEN_CONTEXT.exec(text.slice(Math.max(0, text.length - run - 64), text.length - run));
  return Math.max(held, Math.min(run + (context ? context[0].length : 0), MAX_HELD_TOKEN));
}

/** The secrets check's scanner: every text scanned at once, each by both rule sets. */
export function createSecretsScanner(): Scanner {
  return {
    scan: (texts) => Promise.all(texts.map(scanText)),
    pendingTail: secretsPendingTail,
  };
}
