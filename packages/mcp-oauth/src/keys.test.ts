import { describe, expect, it } from 'vitest';
import { upstreamCredentialKeys } from './keys.js';

/** The hash tag Redis Cluster hashes: the text between the first `{` and the next `}`. */
function hashTag(name: string): string {
  const open = name.indexOf('{');
  const close = name.indexOf('}', open + 1);
  return name.slice(open + 1, close);
}

describe('upstreamCredentialKeys', () => {
  const keys = upstreamCredentialKeys('mcp-oauth:');

  it('puts a key’s tokens and its refresh locks in the key id’s slot, under the prefix', () => {
    expect(keys.tokens('key-a')).toBe('mcp-oauth:tokens:{key-a}');
    expect(keys.refreshLock('key-a', 'docs')).toBe('mcp-oauth:refresh:{key-a}:docs');
    expect(hashTag(keys.refreshLock('key-a', 'docs'))).toBe(hashTag(keys.tokens('key-a')));
  });

  it('names a pending authorization by the hash of its state, never the state', () => {
    const name = keys.pendingAuthorization('the-state-value');
    expect(name).not.toContain('the-state-value');
    expect(name).toMatch(/^mcp-oauth:state:\{[0-9a-f]{64}\}$/);
  });

  it('names a server’s registration by its id and URL, so that a moved server starts afresh', () => {
    expect(keys.client('docs', 'https://a.example/mcp')).not.toBe(keys.client('docs', 'https://b.example/mcp'));
    expect(hashTag(keys.client('docs', 'https://a.example/mcp'))).toBe('docs');
    expect(hashTag(keys.discovery('docs', 'https://a.example/mcp'))).toBe('docs');
  });
});
