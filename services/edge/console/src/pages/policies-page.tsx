/**
 * Policies: the guardrail policies the guard service applies, each with its mode, what it is
 * attached to and its checks; a form that puts one as the admin API's JSON (role admin), and a
 * removal that asks to be confirmed. An external check's credential is never shown back.
 */
import { useState } from 'preact/hooks';
import { CreateForm } from '../action-forms';
import type { AdminApi, PolicyJson, PolicyPut } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { TextField } from '../fields';
import { formatUnixSeconds } from '../format';
import { ManagedRow, type RemovalButtons } from '../managed-row';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { attachmentOf, kindOf } from '../policy-summary';
import { useLoader } from '../use-loader';

const EXAMPLE = JSON.stringify(
  {
    enabled: true,
    mode: 'enforce',
    on_error: 'allow',
    attachment: { all_requests: true },
    checks: [{ name: 'cards', points: ['input'], action: 'block', pii: { entities: ['credit_card'] } }],
  },
  null,
  2,
);

function PutPolicyForm({ api, onSaved }: { api: AdminApi; onSaved: () => void }) {
  const [name, setName] = useState('');
  const [body, setBody] = useState(EXAMPLE);
  const save = async () => {
    await api.policies.replace(name.trim(), JSON.parse(body) as PolicyPut);
    onSaved();
  };
  return (
    <CreateForm testId="put-policy" title="Put a policy" label="Save policy" busyLabel="Saving…" onSubmit={save}>
      <div class="fields">
        <TextField label="Name" value={name} testId="policy-name" placeholder="no-cards" onInput={setName} />
      </div>
      <label>
        Policy (JSON)
        <textarea data-testid="policy-json" rows={12} value={body} onInput={(event) => setBody(event.currentTarget.value)} />
      </label>
    </CreateForm>
  );
}

const REMOVE_POLICY: RemovalButtons = { testId: 'policy-delete', label: 'Delete', confirmLabel: 'Delete' };

function PolicyRow({ api, policy, canChange, onChanged }: { api: AdminApi; policy: PolicyJson; canChange: boolean; onChanged: () => void }) {
  return (
    <ManagedRow
      row={{ 'data-testid': 'policy-row', 'data-policy-name': policy.name }}
      id={policy.name}
      collection={api.policies}
      canChange={canChange}
      onChanged={onChanged}
      removal={{
        ...REMOVE_POLICY,
        question: (
          <>
            Delete the policy <code>{policy.name}</code>?
          </>
        ),
      }}
    >
      <td>{policy.enabled ? 'yes' : 'no'}</td>
      <td>{policy.mode}</td>
      <td>{policy.on_error}</td>
      <td>{attachmentOf(policy)}</td>
      <td>
        {policy.checks.map((check) => (
          <div key={check.name}>
            <code>{check.name}</code> {kindOf(check)} · {check.points.join(', ')} · {check.action}
          </div>
        ))}
      </td>
      <td>
        {policy.stream_window.tokens} tokens / {policy.stream_window.ms} ms
      </td>
      <td>{formatUnixSeconds(policy.updated_at)}</td>
    </ManagedRow>
  );
}

/** The Policies page. */
export function PoliciesPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const policies = useLoader(() => api.policies.list(), [api]);
  const list = policies.data ?? [];
  return (
    <Page name="policies" title="Policies" loaded={policies} tools={<RefreshButton loaded={policies} testId="policies-refresh" />}>
      {canChange && <PutPolicyForm api={api} onSaved={policies.reload} />}
      <ErrorBanner error={policies.error} />
      <Table testId="policies-table" columns={['Name', 'Enabled', 'Mode', 'On error', 'Attached to', 'Checks', 'Stream window', 'Updated', '']}>
        {list.map((policy) => (
          <PolicyRow key={policy.name} api={api} policy={policy} canChange={canChange} onChanged={policies.reload} />
        ))}
        <EmptyRow shown={policies.data !== undefined && list.length === 0} columns={9}>
          No policies yet.
        </EmptyRow>
      </Table>
    </Page>
  );
}
