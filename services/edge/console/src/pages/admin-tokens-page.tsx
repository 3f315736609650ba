/**
 * Admin tokens (role admin only): the tokens auth keeps for the admin API and this console, each
 * with its role; a form that creates one and shows its secret once; a revocation that asks to be
 * confirmed. A revoked token stops working within a second on every edge.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, AdminToken, CreatedAdminToken } from '../admin-api';
import { ConfirmDialog } from '../confirm-dialog';
import { ErrorBanner } from '../error-banner';
import { formatUnixSeconds } from '../format';
import { EmptyRow, Page, RefreshButton, SubmitRow, Table } from '../page';
import { useAction } from '../use-action';
import { asApiError, useLoader } from '../use-loader';

function CreateTokenForm({ api, onCreated }: { api: AdminApi; onCreated: (token: CreatedAdminToken) => void }) {
  const [role, setRole] = useState<'admin' | 'viewer'>('viewer');
  const [name, setName] = useState('');
  const { error, busy, submit } = useAction(asApiError);
  return (
    <form
      class="card"
      data-testid="create-admin-token-form"
      onSubmit={submit(async () => {
        onCreated(await api.createAdminToken({ role, ...(name.trim() ? { name: name.trim() } : {}) }));
        setName('');
      })}
    >
      <h2>Create an admin token</h2>
      <div class="fields">
        <label>
          Name
          <input
            type="text"
            autocomplete="off"
            value={name}
            placeholder="optional"
            onInput={(event) => setName(event.currentTarget.value)}
            data-testid="create-admin-token-name"
          />
        </label>
        <label>
          Role
          <select value={role} onChange={(event) => setRole(event.currentTarget.value as 'admin' | 'viewer')} data-testid="create-admin-token-role">
            <option value="viewer">viewer (reads only)</option>
            <option value="admin">admin</option>
          </select>
        </label>
      </div>
      <SubmitRow
        error={error}
        errorTestId="create-admin-token-error"
        busy={busy}
        label="Create token"
        busyLabel="Creating…"
        testId="create-admin-token-submit"
      />
    </form>
  );
}

function TokenRow({ api, token, onChanged }: { api: AdminApi; token: AdminToken; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const { error, busy, run } = useAction(asApiError);
  return (
    <tr data-testid="admin-token-row" data-token-id={token.id} class={token.revoked ? 'revoked' : undefined}>
      <td>
        <code>{token.id}</code>
      </td>
      <td>{token.name || <span class="muted">—</span>}</td>
      <td data-testid="admin-token-role">{token.role}</td>
      <td>{formatUnixSeconds(token.created_at)}</td>
      <td>
        <code>{token.created_by}</code>
      </td>
      <td data-testid="admin-token-revoked">{token.revoked ? <span class="badge bad">revoked</span> : <span class="badge good">active</span>}</td>
      <td>
        {!token.revoked && !confirming && (
          <button type="button" class="danger" onClick={() => setConfirming(true)} data-testid="admin-token-revoke">
            Revoke
          </button>
        )}
        {confirming && (
          <ConfirmDialog
            testId="admin-token-revoke"
            error={error}
            busy={busy}
            confirmLabel="Revoke for good"
            onConfirm={() =>
              run(async () => {
                await api.revokeAdminToken(token.id);
                setConfirming(false);
                onChanged();
              })
            }
            onCancel={() => setConfirming(false)}
          >
            Revoke the admin token <code>{token.id}</code>? Requests with it are refused within a second. This cannot be undone.
          </ConfirmDialog>
        )}
      </td>
    </tr>
  );
}

/** The Admin tokens page. */
export function AdminTokensPage({ api }: { api: AdminApi }) {
  const tokens = useLoader(() => api.listAdminTokens(), [api]);
  const [created, setCreated] = useState<CreatedAdminToken | undefined>(undefined);
  const list = [...(tokens.data ?? [])].sort((left, right) => right.created_at - left.created_at);
  return (
    <Page name="admin-tokens" title="Admin tokens" loaded={tokens} tools={<RefreshButton loaded={tokens} testId="admin-tokens-refresh" />}>
      {created && (
        <section class="card secret-box" role="status" data-testid="new-admin-token-box">
          <h2>
            Token created: {created.name || created.id} ({created.role})
          </h2>
          <code class="secret" data-testid="new-admin-token-secret">
            {created.secret}
          </code>
          <p class="warning">
            <strong>Copy the secret now: you will not see it again.</strong> The gateway keeps only its hash.
          </p>
          <button type="button" class="secondary" onClick={() => setCreated(undefined)} data-testid="new-admin-token-dismiss">
            I have saved it
          </button>
        </section>
      )}
      <CreateTokenForm
        api={api}
        onCreated={(token) => {
          setCreated(token);
          tokens.reload();
        }}
      />
      <ErrorBanner error={tokens.error} />
      <Table testId="admin-tokens-table" columns={['Id', 'Name', 'Role', 'Created', 'Created by', 'State', '']}>
        {list.map((token) => (
          <TokenRow key={token.id} api={api} token={token} onChanged={tokens.reload} />
        ))}
        <EmptyRow shown={tokens.data !== undefined && list.length === 0} columns={7}>
          No admin tokens yet: the edge's EDGE_ADMIN_TOKEN is the only one.
        </EmptyRow>
      </Table>
    </Page>
  );
}
