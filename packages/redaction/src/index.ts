/**
 * The secrets a prompt or an answer may carry, as named rules over text: the request log redacts
 * them from the bodies it keeps (`redactSecrets`), the guard's secrets check reports them as
 * findings (each rule's entity is the finding's). Every rule's match is the secret itself: a
 * context the rule needs (a field's name, the word `Bearer`) sits in a lookbehind or lookahead, so
 * a match's span is what a mask replaces.
 *
 * Each pattern runs in time linear in its text: no nested quantifier can backtrack over the same
 * characters twice, and the private key block stops at the next `-----BEGIN ` (a block never holds
 * one), so a text of many unterminated headers costs one pass, not one per header.
 */

/** What `redactSecrets` puts in a secret's place. */
export const REDACTED = '[REDACTED]';

/** One kind of secret and where a text shows it. */
export interface SecretRule {
  /** The finding's kind: `private_key`, `bearer_token`, `openai_api_key`, `secret_field`, ... */
  entity: string;
  /**
   * A global pattern whose whole match is the secret. Shared by every caller: use it through
   * `String.prototype.matchAll` or `replace`, which do not depend on its `lastIndex`.
   */
  pattern: RegExp;
}

/**
 * The names of JSON fields whose value is a secret whatever it looks like, as pattern source (to
 * be matched without case): `password`, `api_key`, `apiKey`, `client_secret`, `access_token`, ...
 */
export const SECRET_FIELD_NAME = `[A-Za-z0-9_-]*(?:password|passwd|secret|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|private[_-]?key)`;

/** The characters an API key's body is made of. */
const KEY_BODY = '[A-Za-z0-9_-]';
/**
 * An older OpenAI key's mark: 20 characters, then `T3BlbkFJ` (base64 of `OpenAI`). At a fixed
 * place, so each `sk-` costs a few steps: a search for the mark anywhere in the run would read a
 * run of `sk-sk-sk-...` to its end from each `sk-`.
 */
const OPENAI_MARK = '[A-Za-z0-9]{20}T3BlbkFJ';

/**
 * The rules, in the order `redactSecrets` applies them: secret fields first (a field's value is
 * redacted whole, whatever other rule it would also match), then the token patterns. Token
 * patterns require a run long enough not to hit ordinary words (`sk-` alone, `AKIA` in prose).
 */
export const SECRET_RULES: readonly SecretRule[] = [
  // Secret fields: `"password": "..."`, `"api_key"`, `"apiKey"`, `"client_secret"`,
  // `"access_token"`, ... as JSON: the string value, between its quotes. Only string values: a
  // number is no secret worth the risk of redacting counts.
  { entity: 'secret_field', pattern: new RegExp(String.raw`(?<="${SECRET_FIELD_NAME}"\s*:\s*")(?:[^"\\]|\\.)*(?=")`, 'gi') },
  // The same inside a JSON string (a tool call's arguments, escaped: `\"password\":\"...\"`). There
  // a value's own `\"` and `\\` are `\\\"` and `\\\\`; any other escape is `\x`.
  {
    entity: 'secret_field',
    pattern: new RegExp(String.raw`(?<=\\"${SECRET_FIELD_NAME}\\"\s*:\s*\\")(?:[^"\\]|\\\\\\["\\]|\\[^"\\])*(?=\\")`, 'gi'),
  },
  // PEM private keys (RSA, EC, OPENSSH, PKCS#8, encrypted), the whole block; in JSON its newlines are `\n`.
  { entity: 'private_key', pattern: /-----BEGIN ((?:[A-Z]+ )*)PRIVATE KEY-----(?:(?!-----BEGIN )[\s\S])*?-----END \1PRIVATE KEY-----/g },
  // Bearer tokens, as an Authorization header or its value shows them: the token, not the word.
  // The lookahead first: the lookbehind is tried only where a token starts, not inside a run of spaces.
  { entity: 'bearer_token', pattern: /(?=[A-Za-z0-9._~+/=-])(?<=\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi },
  // Anthropic's keys (`sk-ant-api03-...`, `sk-ant-admin01-...`).
  { entity: 'anthropic_api_key', pattern: new RegExp(String.raw`\bsk-(?=ant-)${KEY_BODY}{16,}`, 'g') },
  // OpenAI's keys: project, service account and admin keys by their prefix, older ones by their
  // shape (see OPENAI_MARK).
  { entity: 'openai_api_key', pattern: new RegExp(String.raw`\bsk-(?=(?:proj|svcacct|admin)-|${OPENAI_MARK})${KEY_BODY}{16,}`, 'g') },
  // Any other `sk-` key (other providers use the prefix too) and the gateway's own (`br-`).
  {
    entity: 'api_key',
    pattern: new RegExp(String.raw`\b(?:sk-(?!ant-|proj-|svcacct-|admin-|${OPENAI_MARK})|br-)${KEY_BODY}{16,}`, 'g'),
  },
  // AWS access key ids (long-term and temporary).
  { entity: 'aws_access_key', pattern: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g },
  // JSON Web Tokens: three base64url parts, the first two starting as JSON objects do (`eyJ`).
  { entity: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}/g },
];

/** The text with every secret the rules know replaced by [REDACTED]. */
export function redactSecrets(text: string): string {
  let redacted = text;
  for (const rule of SECRET_RULES) redacted = redacted.replace(rule.pattern, REDACTED);
  return redacted;
}
