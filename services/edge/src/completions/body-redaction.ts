/**
 * What the request log keeps of a request's bodies: each redacted of the secrets a prompt or an
 * answer may carry, then capped in size at a UTF-8 character boundary with a marker saying how
 * much was cut. Redaction runs before the cap, so a secret cut in two by the cap is never kept
 * half-visible; it runs on the text (JSON as received), so it covers secrets in any field. The
 * rules are @gateway/redaction's, the ones the guard's secrets check reports.
 */
import { redactSecrets } from '@gateway/redaction';

/** The redaction this file applies, for callers that import it from here. */
export { REDACTED, redactSecrets } from '@gateway/redaction';

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
