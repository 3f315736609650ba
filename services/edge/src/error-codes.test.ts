import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_REASONS } from '@gateway/grpc';
import { describe, expect, it } from 'vitest';
import { DENIALS, EDGE_ERROR_CODES, edgeError, edgeErrorEntry, registeredCodes } from './error-codes.js';
import { typeForStatus } from './errors.js';

const SOURCE = fileURLToPath(new URL('.', import.meta.url));

/** Every source file of the edge (tests left out). */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The text of the call whose `(` is at `open`, to its matching `)`, string literals skipped. */
function callText(text: string, open: number): string {
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    const character = text[index]!;
    if (character === "'" || character === '"' || character === '`') {
      const close = text.indexOf(character, index + 1);
      index = close < 0 ? text.length : close;
    } else if (character === '(') depth++;
    else if (character === ')' && --depth === 0) return text.slice(open + 1, index);
  }
  return text.slice(open + 1);
}

/** The arguments of a call's text at its top level. */
function topLevelArguments(call: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < call.length; index++) {
    const character = call[index]!;
    if (character === "'" || character === '"' || character === '`') {
      const close = call.indexOf(character, index + 1);
      index = close < 0 ? call.length : close;
    } else if ('([{'.includes(character)) depth++;
    else if (')]}'.includes(character)) depth--;
    else if (character === ',' && depth === 0) {
      parts.push(call.slice(start, index).trim());
      start = index + 1;
    }
  }
  const last = call.slice(start).trim();
  if (last) parts.push(last);
  return parts;
}

/** An error the source sends: its code, and the status and type when the call names them. */
interface SentCode {
  where: string;
  code: string;
  status?: number;
  type?: string;
}

/** The codes of every `new RequestError(...)`, `invalid(...)` and `edgeError(...)` in the edge's source. */
function sentCodes(): SentCode[] {
  const sent: SentCode[] = [];
  for (const file of sourceFiles(SOURCE)) {
    const text = readFileSync(file, 'utf8');
    const where = file.slice(SOURCE.length);
    for (const match of text.matchAll(/(?<![\w.])(new RequestError|invalid|edgeError)\(/g)) {
      if (text.slice(Math.max(0, match.index - 9), match.index).includes('function')) continue;
      const call = callText(text, match.index + match[0].length - 1);
      const args = topLevelArguments(call);
      if (match[1] === 'edgeError') sent.push({ where, code: /^'([a-z_]+)'$/.exec(args[0] ?? '')?.[1] ?? args[0]! });
      else if (match[1] === 'invalid') sent.push({ where, code: /^'([a-z_]+)'$/.exec(args[2] ?? "'invalid_value'")?.[1] ?? args[2]!, status: 400 });
      else {
        const codes = [...(/\bcode:\s*([^,}\n]+)/.exec(call)?.[1] ?? '').matchAll(/'([a-z_]+)'/g)].map((code) => code[1]!);
        const status = /^[0-9]+$/.test(args[0] ?? '') ? Number(args[0]) : undefined;
        const type = /\btype:\s*'([a-z_]+)'/.exec(call)?.[1] ?? (status === undefined ? undefined : typeForStatus(status));
        for (const code of codes) sent.push({ where, code, status, type });
      }
    }
  }
  return sent;
}

describe('the error code registry', () => {
  const sent = sentCodes();

  it('finds the codes the source sends', () => {
    // A scan that finds nothing proves nothing: these are sent by files of every part of the edge.
    const codes = new Set(sent.map((entry) => entry.code));
    for (const code of ['missing_api_key', 'unknown_url', 'invalid_json', 'unknown_parameter', 'missing_required_parameter', 'console_not_built']) {
      expect(codes).toContain(code);
    }
  });

  it('holds every code the edge can send', () => {
    const registered = registeredCodes();
    expect(sent.filter((entry) => !registered.has(entry.code))).toEqual([]);
    for (const entry of Object.values(DENIALS)) expect(registered).toContain(entry.code);
  });

  it('gives each code the status and type it is sent with', () => {
    const disagreeing = sent.filter((entry) => {
      if (entry.status === undefined || !registeredCodes().has(entry.code)) return false;
      const registered = edgeErrorEntry(entry.code as keyof typeof EDGE_ERROR_CODES);
      return registered.status !== entry.status || (entry.type !== undefined && registered.type !== entry.type);
    });
    expect(disagreeing).toEqual([]);
  });

  it("declares each of the edge's own codes once: none is also a peer's reason", () => {
    expect(Object.keys(EDGE_ERROR_CODES).filter((code) => Object.hasOwn(ERROR_REASONS, code))).toEqual([]);
  });

  it('builds a refusal with the status and type of its code', () => {
    const refusal = edgeError('unknown_parameter', "Unknown query parameter 'x'.", { param: 'x' });
    expect(refusal).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'unknown_parameter', param: 'x' });
    expect(edgeError('auth_unavailable', 'down')).toMatchObject({ status: 503, type: 'service_unavailable_error', code: 'auth_unavailable' });
  });
});
