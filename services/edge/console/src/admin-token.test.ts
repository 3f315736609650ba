import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadAdminToken, takeSsoToken } from './admin-token';

/** The page's address and this tab's storage, as far as admin-token.ts uses them. */
function stubBrowser(hash: string) {
  const stored = new Map<string, string>();
  const address = { pathname: '/console/', search: '', hash };
  const replaced: string[] = [];
  vi.stubGlobal('location', address);
  vi.stubGlobal('history', {
    replaceState: (_state: unknown, _unused: string, url: string) => {
      replaced.push(url);
      address.hash = url.slice(url.indexOf('#'));
    },
  });
  vi.stubGlobal('sessionStorage', {
    getItem: (name: string) => stored.get(name) ?? null,
    setItem: (name: string, value: string) => void stored.set(name, value),
    removeItem: (name: string) => void stored.delete(name),
  });
  return { address, replaced };
}

const SESSION = 'brs-eyJzdWIiOiJ1c2VyLTEiLCJyb2xlIjoidmlld2VyIiwiZXhwIjoxfQ.c2lnbmF0dXJlLW9mLXRoZS1zZXNzaW9u_-';

describe('takeSsoToken', () => {
  beforeEach(() => vi.unstubAllGlobals());
  afterEach(() => vi.unstubAllGlobals());

  it('keeps the session single sign-on handed over in the fragment and removes it from the address', () => {
    const { address, replaced } = stubBrowser(`#sso=${SESSION}`);
    expect(takeSsoToken()).toBe(SESSION);
    expect(loadAdminToken()).toBe(SESSION);
    expect(replaced).toEqual(['/console/#/keys']);
    expect(address.hash).toBe('#/keys');
  });

  it('leaves any other address alone', () => {
    for (const hash of ['', '#/usage', '#sso=', '#sso=not-a-session', `#sso=${SESSION}&x=<script>`, `#/keys?sso=${SESSION}`]) {
      const { replaced } = stubBrowser(hash);
      expect(takeSsoToken(), hash).toBeNull();
      expect(loadAdminToken(), hash).toBeNull();
      expect(replaced, hash).toEqual([]);
    }
  });
});
