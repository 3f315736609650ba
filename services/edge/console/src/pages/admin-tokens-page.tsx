/**
 * Admin tokens (role admin only): the tokens auth keeps for the admin API and this console, each
 * with its role; a form that creates one and shows its secret once; a revocation that asks to be
 * confirmed. A revoked token stops working within a second on every edge.
 */
import { useState } from 'preact/hooks';
import { CreateForm } from '../action-forms';
import type { AdminApi, AdminToken, CreatedAdminToken } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { type Options, SelectField, TextField } from '../fields';
import { formatUnixSeconds } from '../format';
import { ManagedRow, type RemovalButtons } from '../managed-row';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { SecretBox } from '../secret-box';
import { useLoader } from '../use-loader';

const ROLES: Options<'admin' | 'viewer'> = [
  ['viewer', 'viewer (reads only)'],
  ['admin', 'admin'],
];

function CreateTokenForm({ api, onCreated }: { api: AdminApi; onCreated: (token: CreatedAdminToken) => void }) {
  const [role, setRole] = useState<'admin' | 'viewer'>('viewer');
  const [name, setName] = useState('');
  const create = async () => {
    onCreated(await api.adminTokens.create({ role, ...(name.trim() ? { name: name.trim() } : {}) }));
    setName('');
  };
  return (
    <CreateForm testId="create-admin-token" title="Create an admin token" label="Create token" onSubmit={create}>
      <div class="fields">
        <TextField label="Name" value={name} testId="create-admin-token-name" placeholder="optional" onInput={setName} />
        <SelectField label="Role" value={role} testId="create-admin-token-role" options={ROLES} onChange={setRole} />
      </div>
    </CreateForm>
  );
}

/** An admin token's revocation: its button and confirmation. */
const REVOKE_TOKEN: RemovalButtons = { testId: 'admin-token-revoke', label: 'Revoke', confirmLabel: 'Revoke for good' };

function TokenRow({ api, token, onChanged }: { api: AdminApi; token: AdminToken; onChanged: () => void }) {
  return (
    <ManagedRow
      row={{ 'data-testid': 'admin-token-row', 'data-token-id': token.id, ...(token.revoked && { class: 'revoked' }) }}
      id={token.id}
      collection={api.adminTokens}
      canChange={!token.revoked}
      onChanged={onChanged}
      removal={{
        ...REVOKE_TOKEN,
        question: (
          <>
            Revoke the admin token <code>{token.id}</code>? Requests with it are refused within a second. This cannot be undone.
          </>
        ),
      }}
    >
      <td>{token.name || <span class="muted">—</span>}</td>
      <td data-testid="admin-token-role">{token.role}</td>
      <td>{formatUnixSeconds(token.created_at)}</td>
      <td>
        <code>{token.created_by}</code>
      </td>
      <td data-testid="admin-token-revoked">{token.revoked ? <span class="badge bad">revoked</span> : <span class="badge good">active</span>}</td>
    </ManagedRow>
  );
}

/** The Admin tokens page. */
export function AdminTokensPage({ api }: { api: AdminApi }) {
  const tokens = useLoader(() => api.adminTokens.list(), [api]);
  const [created, setCreated] = useState<CreatedAdminToken | undefined>(undefined);
  const list = [...(tokens.data ?? [])].sort((left, right) => right.created_at - left.created_at);
  return (
    <Page name="admin-tokens" title="Admin tokens" loaded={tokens} tools={<RefreshButton loaded={tokens} testId="admin-tokens-refresh" />}>
      {created && (
        <SecretBox
          testId="new-admin-token"
          title={`Token created: ${created.name || created.id} (${created.role})`}
          secret={created.secret}
          onDismiss={() => setCreated(undefined)}
        />
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
