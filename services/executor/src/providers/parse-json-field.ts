/**
 * Request validation shared by the adapters that must read JSON the caller sent as strings (tool
 * arguments, tool parameter schemas): a caller's mistake is an INVALID_ARGUMENT naming the field,
 * found before any upstream call is paid for.
 */
import { GatewayError, type ErrorReason } from '@gateway/grpc';

/** A GatewayError for a request the adapter cannot translate: the caller's to fix (HTTP 400). */
export function invalidRequest(message: string, param: string, reason: ErrorReason = 'invalid_request'): GatewayError {
  return GatewayError.of(reason, message, { param });
}

/** The refusal of a message whose role is missing or none the gateway knows. */
export function unknownRole(position: number): GatewayError {
  return invalidRequest(`messages[${position}].role is missing or unknown.`, `messages[${position}].role`);
}

/** The refusal of an image (or file) URL that is neither http(s) nor a base64 data URL. */
export function notAUrl(param: string): GatewayError {
  return invalidRequest(`${param} must be an http(s) URL or a base64 data URL.`, param);
}

/** Parses a JSON string the caller sent; throws INVALID_ARGUMENT naming `param` when it is not JSON. */
export function parseJsonField(text: string, param: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidRequest(`${param} is not valid JSON.`, param);
  }
}

/**
 * Parses tool-call arguments, which the target API needs as an object: an empty string is `{}`
 * (a call without arguments), anything else must be a JSON object.
 */
export function parseArgumentsObject(text: string, param: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  const value = parseJsonField(text, param);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidRequest(`${param} must be a JSON object.`, param);
  return value as Record<string, unknown>;
}

/** A data URL's parts: `data:image/png;base64,iVBO...` -> { mediaType: 'image/png', data: 'iVBO...' }. */
export interface DataUrl {
  readonly mediaType: string;
  readonly data: string;
}

/** Parses a base64 data URL; undefined for anything else (an http(s) URL, a non-base64 data URL). */
export function parseDataUrl(url: string): DataUrl | undefined {
  const match = /^data:([^;,]+)((?:;[^;,]+)*);base64,(.*)$/s.exec(url.trim());
  if (!match) return undefined;
  return { mediaType: (match[1] as string).toLowerCase(), data: match[3] as string };
}
