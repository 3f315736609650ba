/**
 * The console's shell: the login form while there is no token, else the navigation bar and the
 * page that the location's hash names (`#/keys`, `#/teams`, `#/usage`, `#/requests`, `#/models`, `#/mcp-servers`, `#/policies`, `#/audit`,
 * `#/admin-tokens`). Hash routing keeps every page at the one URL the edge serves, /console. Who
 * the token belongs to (GET /admin/v1/me) decides what is shown: a viewer gets no button that
 * changes anything, and no Admin tokens page.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { AdminApi, type AdminSession, type ApiError } from './admin-api';
import { asApiError } from './use-loader';
import { clearAdminToken, loadAdminToken, saveAdminToken, takeSsoToken } from './admin-token';
import { LoginPage } from './pages/login-page';
import { KeysPage } from './pages/keys-page';
import { TeamsPage } from './pages/teams-page';
import { UsagePage } from './pages/usage-page';
import { RequestsPage } from './pages/requests-page';
import { ModelsPage } from './pages/models-page';
import { AuditPage } from './pages/audit-page';
import { AdminTokensPage } from './pages/admin-tokens-page';
import { McpServersPage } from './pages/mcp-servers-page';
import { PoliciesPage } from './pages/policies-page';

/** The pages, in the order the navigation bar lists them. */
const PAGES = [
  { id: 'keys', title: 'Keys' },
  { id: 'teams', title: 'Teams' },
  { id: 'usage', title: 'Usage' },
  { id: 'requests', title: 'Requests' },
  { id: 'models', title: 'Models' },
  { id: 'mcp-servers', title: 'MCP servers' },
  { id: 'policies', title: 'Policies' },
  { id: 'audit', title: 'Audit' },
  { id: 'admin-tokens', title: 'Admin tokens', adminOnly: true },
] as const;

type PageId = (typeof PAGES)[number]['id'];

/** The page the hash names; anything else is the first page. */
function pageOf(hash: string): PageId {
  const id = hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  return PAGES.find((page) => page.id === id)?.id ?? 'keys';
}

/** The current page, following the hash. */
function useHashPage(): PageId {
  const [page, setPage] = useState(() => pageOf(location.hash));
  useEffect(() => {
    const follow = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return page;
}

/** Who is logged in, in the navigation bar: the SSO user's name or the token's subject, and the role. */
function Whoami({ session }: { session: AdminSession }) {
  return (
    <span class="whoami" data-testid="whoami" data-role={session.role} data-via={session.via} title={`via ${session.via}`}>
      {session.name ?? session.subject} · {session.role}
    </span>
  );
}

/** The bar over every page: the pages the session may open (the one shown marked), who is logged in, and Log out. */
function TopBar({ page, canChange, session, onLogOut }: { page: string; canChange: boolean; session: AdminSession; onLogOut: () => void }) {
  return (
    <header class="top">
      <span class="brand">Gateway console</span>
      <nav>
        {PAGES.filter((entry) => canChange || !('adminOnly' in entry)).map((entry) => (
          <a
            key={entry.id}
            href={`#/${entry.id}`}
            class={entry.id === page ? 'active' : undefined}
            aria-current={entry.id === page ? 'page' : undefined}
            data-testid={`nav-${entry.id}`}
          >
            {entry.title}
          </a>
        ))}
      </nav>
      <Whoami session={session} />
      <button type="button" class="secondary" data-testid="logout" onClick={onLogOut}>
        Log out
      </button>
    </header>
  );
}

/** The whole console. */
export function App() {
  // A session handed over by single sign-on first (it also cleans the address), else this tab's token.
  const [token, setToken] = useState(() => takeSsoToken() ?? loadAdminToken());
  const [session, setSession] = useState<AdminSession | undefined>(undefined);
  const [loginError, setLoginError] = useState<ApiError | string | undefined>(undefined);
  const hashPage = useHashPage();

  // A refused token (expired, rotated, or a gateway key typed by mistake) ends the session: back
  // to the login form, with the gateway's reason.
  const logOut = (reason?: ApiError) => {
    clearAdminToken();
    setToken(null);
    setSession(undefined);
    setLoginError(reason);
  };
  const api = useMemo(() => (token ? new AdminApi(token, logOut) : undefined), [token]);
  const canChange = session?.role === 'admin';
  // A viewer at an admin-only page's address (the hash kept from an admin's session) sees the first page.
  const page = hashPage === 'admin-tokens' && session && !canChange ? 'keys' : hashPage;

  // Whom the token belongs to, and so what the pages offer: a viewer gets no buttons that change.
  useEffect(() => {
    if (!api || session) return;
    api.session().then(setSession, (error: unknown) => logOut(asApiError(error)));
  }, [api, session]);

  useEffect(() => {
    document.title = token ? `${PAGES.find((entry) => entry.id === page)!.title} · Gateway console` : 'Log in · Gateway console';
  }, [token, page]);

  if (!api) {
    return (
      <LoginPage
        error={loginError}
        onLogin={async (candidate) => {
          // Checked with a real call before it is kept, so a wrong token never reaches the pages.
          let checked: AdminSession;
          try {
            checked = await new AdminApi(candidate, () => undefined).session();
          } catch (error) {
            setLoginError(asApiError(error));
            return;
          }
          saveAdminToken(candidate);
          setLoginError(undefined);
          setSession(checked);
          setToken(candidate);
        }}
      />
    );
  }

  if (!session) {
    return (
      <main class="login" data-testid="session-loading">
        <p class="muted">Loading…</p>
      </main>
    );
  }

  return (
    <div class="shell">
      <TopBar page={page} canChange={canChange} session={session} onLogOut={() => logOut()} />
      <main>
        {page === 'keys' && <KeysPage api={api} canChange={canChange} />}
        {page === 'teams' && <TeamsPage api={api} canChange={canChange} />}
        {page === 'usage' && <UsagePage api={api} />}
        {page === 'requests' && <RequestsPage api={api} />}
        {page === 'models' && <ModelsPage api={api} />}
        {page === 'mcp-servers' && <McpServersPage api={api} canChange={canChange} />}
        {page === 'policies' && <PoliciesPage api={api} canChange={canChange} />}
        {page === 'audit' && <AuditPage api={api} />}
        {page === 'admin-tokens' && canChange && <AdminTokensPage api={api} />}
      </main>
    </div>
  );
}
