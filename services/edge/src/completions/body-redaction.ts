/**
 * What the request log keeps of a request's bodies: each redacted of the secrets a prompt or an
 * answer may carry, then capped in size at a UTF-8 character boundary with a marker saying how
 * much was cut. Redaction runs before the cap, so a secret cut in two by the cap is never kept
 * half-visible; it runs on the text (JSON as received), so it covers secrets in any field.
 */

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * The secrets redacted, each a pattern over the body's text. Token patterns require a run long
 * enough not to hit ordinary words (`sk-` alone, `AKIA` in prose).
 */
const SECRET_PATTERNS: readonly RegExp[] = [
  // PEM private keys (RSA, EC, OPENSSH, PKCS#8, encrypted), the whole block; in JSON its newlines are `\n`.
  /-----BEGIN ((?:[A-Z]+ )*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g,
  // Bearer tokens, as an Authorization header or its value shows them.
  /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  // API keys: OpenAI's and Anthropic's (`sk-`, `sk-proj-`, `sk-ant-...`) and the gateway's own (`br-`).
  /\b(?:sk|br)-[A-Za-z0-9_-]{16,}/g,
  // AWS access key ids (long-term and temporary).
  /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g,
  // JSON Web Tokens: three base64url parts, the first two starting as JSON objects do (`eyJ`).
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}/g,
];

/** The names of JSON fields whose value is a secret whatever it looks like (matched without case). */
const SECRET_NAME = `[A-Za-z0-9_-]*(?:password|passwd|secret|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|private[_-]?key)`;

/**
 * Secret fields: `"password": "..."`, `"api_key"`, `"apiKey"`, `"client_secret"`,
 * `"access_token"`, ... as JSON, and the same inside a JSON string (a tool call's arguments,
 * escaped: `\"password\":\"...\"`). Only string values: a number is no secret worth the risk of
 * redacting counts.
 */
const SECRET_FIELDS: readonly RegExp[] = [
  new RegExp(String.raw`("${SECRET_NAME}"\s*:\s*")(?:[^"\\]|\\.)*(")`, 'gi'),
  // Inside a string a value's own `\"` and `\\` are `\\\"` and `\\\\`; any other escape is `\x`.
  new RegExp(String.raw`(\\"${SECRET_NAME}\\"\s*:\s*\\")(?:[^"\\]|\\\\\\["\\]|\\[^"\\])*(\\")`, 'gi'),
];

/** The body's text with every secret the patterns know replaced by [REDACTED]. */
export function redactSecrets(text: string): string {
  let redacted = text;
  for (const field of SECRET_FIELDS) redacted = redacted.replace(field, `$1${REDACTED}$2`);
  for (const pattern of SECRET_PATTERNS)
    redacted = redacted.replace(pattern, (_whole: string, prefix?: string) =>
      // The Bearer pattern keeps its word; the PEM pattern's group is the key's kind, not a prefix.
      typeof prefix === 'string' && /^Bearer\s/i.test(prefix) ? `${prefix}${REDACTED}` : REDACTED,
    );
  return redacted;
}

/** A body as the log keeps it: its text and how many bytes the cap cut from its end. */
export interface KeptBody {
  text: string;
  truncatedBytes: number;
}

/**
 * The text cut to at most `maxBytes` bytes of UTF-8, never inside a character, with a marker
 * (`…[truncated N bytes]`) that counts within the cap; whole when it fits.
 */
export function capUtf8(text: string, maxBytes: number): KeptBody {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncatedBytes: 0 };
  // The marker's length depends on the count; the count's digits never exceed the total's.
  const marker = (cut: number) => `…[truncated ${cut} bytes]`;
  const room = Math.max(0, maxBytes - Buffer.byteLength(marker(bytes.length)));
  let end = room;
  // Back off continuation bytes (10xxxxxx) to the start of the character the cap falls in.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  const truncatedBytes = bytes.length - end;
  return { text: bytes.subarray(0, end).toString('utf8') + marker(truncatedBytes), truncatedBytes };
}

/** A body for the log: redacted, then capped (see the file's comment). */
export function keptBody(text: string, maxBytes: number): KeptBody {
  return capUtf8(redactSecrets(text), maxBytes);
}
