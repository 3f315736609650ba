/**
 * The recorded fixtures of the provider adapters (src/providers/<provider>/fixtures), each written
 * from that provider's published API reference, for the fake upstream of @gateway/testing to
 * replay. Test-only: excluded from the build.
 */
import { readFileSync } from 'node:fs';

/** The fixture folder of the openai-compatible adapter. */
export const FIXTURES = new URL('../providers/openai-compatible/fixtures/', import.meta.url);

/** Reads a fixture file as text. */
export function fixture(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

/**
 * Reads a fixture of any provider folder (`anthropic`, `gemini`, `openai-compatible`), each written
 * from that provider's published API reference.
 */
export function providerFixture(provider: string, name: string): string {
  return readFileSync(new URL(`../providers/${provider}/fixtures/${name}`, import.meta.url), 'utf8');
}
