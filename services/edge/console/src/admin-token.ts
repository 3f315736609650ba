/**
 * Where the admin token lives between page loads: this tab's sessionStorage and nowhere else.
 * Not localStorage (it would outlive the tab and be shared with every other tab) and not a cookie
 * (the browser would send it by itself, which is what cross-site request forgery abuses).
 */
const STORAGE_KEY = 'gateway-console.admin-token';

/**
 * What `use` does with this tab's sessionStorage, or `otherwise` where the browser disables
 * storage: then the user logs in on every load, and a token saved lives in memory until the page
 * is left.
 */
function withStorage<T>(use: (storage: Storage) => T, otherwise: T): T {
  try {
    return use(sessionStorage);
  } catch {
    return otherwise;
  }
}

/** The token of this tab's session, if its user logged in. */
export function loadAdminToken(): string | null {
  return withStorage((storage) => storage.getItem(STORAGE_KEY), null);
}

/** Keeps the token for this tab's session. */
export function saveAdminToken(token: string): void {
  withStorage((storage) => storage.setItem(STORAGE_KEY, token), undefined);
}

/** Forgets the token (log out, or the gateway refused it). */
export function clearAdminToken(): void {
  withStorage((storage) => storage.removeItem(STORAGE_KEY), undefined);
}

/**
 * The session credential that single sign-on hands over in the address's fragment
 * (`/console/#sso=brs-...`, never in the query, which servers and proxies log): kept like a typed
 * token, and removed from the address and this history entry at once.
 */
export function takeSsoToken(): string | null {
  const match = /^#sso=(brs-[A-Za-z0-9_.-]+)$/.exec(location.hash);
  if (!match) return null;
  history.replaceState(null, '', `${location.pathname}${location.search}#/keys`);
  saveAdminToken(match[1]!);
  return match[1]!;
}
