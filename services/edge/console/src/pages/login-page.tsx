/**
 * Asks for an admin token: the edge's EDGE_ADMIN_TOKEN, or an admin token (`bra-...`) of role
 * admin or viewer, and offers "Sign in with SSO" when the edge has single sign-on: a plain link to
 * /console/sso/login, a top-level navigation to the identity provider that comes back to /console
 * with the session in the fragment. A token is checked against the admin API before the console
 * keeps it, and kept in this tab's sessionStorage only.
 */
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, ssoOffered } from '../admin-api';
import { SubmitRow } from '../page';

/** The login form; `error` is why the last attempt or session ended. */
export function LoginPage({ error, onLogin }: { error: ApiError | string | undefined; onLogin: (token: string) => Promise<void> }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [sso, setSso] = useState(false);
  useEffect(() => {
    void ssoOffered().then(setSso);
  }, []);
  return (
    <main class="login" data-testid="page-login">
      <form
        class="card"
        data-testid="login-form"
        onSubmit={async (event) => {
          event.preventDefault();
          const candidate = token.trim();
          if (!candidate) return;
          setBusy(true);
          try {
            await onLogin(candidate);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>Gateway console</h1>
        {sso && (
          <>
            <a class="button" href="/console/sso/login" data-testid="login-sso">
              Sign in with SSO
            </a>
            <p class="hint or">or with a token</p>
          </>
        )}
        <p class="hint">
          Enter an admin token: the edge's <code>EDGE_ADMIN_TOKEN</code>, or an admin token (<code>bra-…</code>) of role admin or viewer. It stays in this tab
          only and is forgotten when you close it or log out.
        </p>
        <label>
          Admin token
          <input
            type="password"
            name="admin-token"
            autocomplete="off"
            spellcheck={false}
            required
            value={token}
            onInput={(event) => setToken(event.currentTarget.value)}
            data-testid="login-token"
          />
        </label>
        <SubmitRow error={error} errorTestId="login-error" busy={busy} label="Log in" busyLabel="Checking…" testId="login-submit" />
      </form>
    </main>
  );
}
