/**
 * The recorded fixtures of the provider adapters (this package's fixtures/<provider>/), each written
 * from that provider's published API reference, for the fake upstream to replay. Paths resolve from
 * this module, so they hold from src/ and from dist/ alike.
 */
import { readFileSync } from 'node:fs';

/** The fixture folder of the whole package: one folder per provider. */
const FIXTURES = new URL('../fixtures/', import.meta.url);

/**
 * Reads a fixture of a provider folder (`anthropic`, `azure`, `bedrock`, `gemini`,
 * `openai-compatible`, `vertex`) as text.
 */
export function providerFixture(provider: string, name: string): string {
  return readFileSync(new URL(`${provider}/${name}`, FIXTURES), 'utf8');
}

/** Reads a fixture of the openai-compatible folder as text. */
export function fixture(name: string): string {
  return providerFixture('openai-compatible', name);
}
