/**
 * Keys: every API key with its plan, team, limits, budgets and state; a form that creates one (in
 * a team, chosen once for good) and shows its secret once; per key, a form that changes its plan,
 * name, limits and budgets, and a revocation that asks to be confirmed. A viewer (canChange false)
 * sees the list only.
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import { PLANS, type AdminApi, type ApiError, type CreatedKey, type Key, type KeyCreation, type Plan, type Team } from '../admin-api';
import { ConfirmDialog } from '../confirm-dialog';
import { ErrorBanner } from '../error-banner';
import { FieldError, fieldsOfKey, keyChange, parseFields, type KeyFields } from '../key-fields';
import { formatBudget, formatLimit, formatUnixSeconds } from '../format';
import { EmptyRow, Page, RefreshButton, SubmitRow, Table } from '../page';
import { useAction } from '../use-action';
import { asApiError, useLoader } from '../use-loader';

const EMPTY_FIELDS: KeyFields = {
  name: '',
  plan: 'starter',
  requestsPerMinute: '',
  tokensPerMinute: '',
  dailyBudget: '',
  monthlyBudget: '',
  allowedModels: '',
  logBodies: false,
};

/** A form error: a field typed wrongly, or what the admin API answered. */
function formError(error: unknown): ApiError | string {
  return error instanceof FieldError ? error.message : asApiError(error);
}

/**
 * The plan, name, limit and budget inputs of both key forms. `prefix` names their test ids;
 * `placeholders` shows what an empty field stands for.
 */
function KeyFieldInputs({
  fields,
  onChange,
  prefix,
  placeholders,
}: {
  fields: KeyFields;
  onChange: (fields: KeyFields) => void;
  prefix: string;
  placeholders: { requestsPerMinute: string; tokensPerMinute: string; dailyBudget: string; monthlyBudget: string };
}) {
  const input = (
    field: Exclude<keyof KeyFields, 'plan' | 'logBodies'>,
    label: string,
    testId: string,
    placeholder: string,
    mode: 'numeric' | 'decimal' | 'text',
  ) => (
    <label>
      {label}
      <input
        type="text"
        inputMode={mode}
        autocomplete="off"
        value={fields[field]}
        placeholder={placeholder}
        onInput={(event) => onChange({ ...fields, [field]: event.currentTarget.value })}
        data-testid={`${prefix}-${testId}`}
      />
    </label>
  );
  return (
    <div class="fields">
      {input('name', 'Name', 'name', 'optional', 'text')}
      <label>
        Plan
        <select value={fields.plan} onChange={(event) => onChange({ ...fields, plan: event.currentTarget.value as Plan })} data-testid={`${prefix}-plan`}>
          {PLANS.map((plan) => (
            <option key={plan} value={plan}>
              {plan}
            </option>
          ))}
        </select>
      </label>
      {input('requestsPerMinute', 'Requests / min', 'rpm', placeholders.requestsPerMinute, 'numeric')}
      {input('tokensPerMinute', 'Tokens / min', 'tpm', placeholders.tokensPerMinute, 'numeric')}
      {input('dailyBudget', 'Daily budget (USD)', 'daily', placeholders.dailyBudget, 'decimal')}
      {input('monthlyBudget', 'Monthly budget (USD)', 'monthly', placeholders.monthlyBudget, 'decimal')}
      {input('allowedModels', 'Allowed models', 'models', 'every model', 'text')}
      <label>
        <input
          type="checkbox"
          checked={fields.logBodies}
          onChange={(event) => onChange({ ...fields, logBodies: event.currentTarget.checked })}
          data-testid={`${prefix}-log-bodies`}
        />{' '}
        Keep request bodies (redacted) in the request log
      </label>
    </div>
  );
}

/** Creates a key; what is left empty follows the plan. */
function CreateKeyForm({ api, teams, onCreated }: { api: AdminApi; teams: readonly Team[]; onCreated: (key: CreatedKey) => void }) {
  const [fields, setFields] = useState<KeyFields>(EMPTY_FIELDS);
  const [teamId, setTeamId] = useState('');
  const { error, busy, submit } = useAction(formError);
  return (
    <form
      class="card"
      data-testid="create-key-form"
      onSubmit={submit(async () => {
        const parsed = parseFields(fields);
        // The create form starts from a plan it offers and offers only those: never `unknown`.
        const creation: KeyCreation = { plan: fields.plan as Plan };
        if (fields.name.trim()) creation.name = fields.name.trim();
        const limits: NonNullable<KeyCreation['limits']> = {};
        if (parsed.requestsPerMinute !== undefined) limits.requests_per_minute = parsed.requestsPerMinute;
        if (parsed.tokensPerMinute !== undefined) limits.tokens_per_minute = parsed.tokensPerMinute;
        if (Object.keys(limits).length > 0) creation.limits = limits;
        const budgets: NonNullable<KeyCreation['budgets']> = {};
        if (parsed.dailyBudget !== undefined) budgets.daily_usd = parsed.dailyBudget;
        if (parsed.monthlyBudget !== undefined) budgets.monthly_usd = parsed.monthlyBudget;
        if (Object.keys(budgets).length > 0) creation.budgets = budgets;
        if (parsed.allowedModels) creation.allowed_models = parsed.allowedModels;
        if (fields.logBodies) creation.log_bodies = true;
        if (teamId) creation.team_id = teamId;
        onCreated(await api.createKey(creation));
        setFields(EMPTY_FIELDS);
        setTeamId('');
      })}
    >
      <h2>Create a key</h2>
      <KeyFieldInputs
        fields={fields}
        onChange={setFields}
        prefix="create-key"
        placeholders={{ requestsPerMinute: "plan's", tokensPerMinute: "plan's", dailyBudget: "plan's", monthlyBudget: "plan's" }}
      />
      <div class="fields">
        <label>
          Team
          <select value={teamId} onChange={(event) => setTeamId(event.currentTarget.value)} data-testid="create-key-team">
            <option value="">no team</option>
            {teams.map((team) => (
              <option key={team.id} value={team.id}>
                {team.name} ({team.id})
              </option>
            ))}
          </select>
        </label>
      </div>
      <p class="hint">
        Leave a limit or budget empty to follow the plan; type <code>unlimited</code> to lift it. Allowed models: ids and <code>prefix*</code> patterns,
        separated by commas; empty for every model. A key's team is chosen here, for good: its team's limits, budgets and allowed models apply besides its own.
      </p>
      <SubmitRow error={error} errorTestId="create-key-error" busy={busy} label="Create key" busyLabel="Creating…" testId="create-key-submit" />
    </form>
  );
}

/** The new key's secret, shown this once. */
function SecretBox({ created, onDismiss }: { created: CreatedKey; onDismiss: () => void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  const secretElement = useRef<HTMLElement>(null);
  return (
    <section class="card secret-box" role="status" data-testid="new-key-box">
      <h2>Key created: {created.name || created.id}</h2>
      <p>
        Key id <code data-testid="new-key-id">{created.id}</code>, plan {created.plan}. Its secret:
      </p>
      <div class="secret-line">
        <code class="secret" data-testid="new-key-secret" ref={secretElement}>
          {created.secret}
        </code>
        <button
          type="button"
          data-testid="new-key-copy"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(created.secret);
              setCopied('yes');
            } catch {
              // No clipboard (an insecure origin, a denied permission): select it for a manual copy.
              if (secretElement.current) getSelection()?.selectAllChildren(secretElement.current);
              setCopied('failed');
            }
          }}
        >
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
      </div>
      {copied === 'failed' && <p class="hint">The browser did not allow copying: the secret is selected, copy it with the keyboard.</p>}
      <p class="warning">
        <strong>Copy the secret now: you will not see it again.</strong> The gateway keeps only its hash.
      </p>
      <button type="button" class="secondary" onClick={onDismiss} data-testid="new-key-dismiss">
        I have saved it
      </button>
    </section>
  );
}

/** Changes a key's plan, name, limits and budgets with one PATCH of what changed. */
function EditKeyForm({ api, apiKey, onDone }: { api: AdminApi; apiKey: Key; onDone: (changed: boolean) => void }) {
  const original = fieldsOfKey(apiKey);
  const [fields, setFields] = useState<KeyFields>(original);
  const { error, busy, submit } = useAction(formError);
  const planned = (value: string) => `plan's (${value})`;
  return (
    <form
      class="edit"
      data-testid="edit-key-form"
      onSubmit={submit(async () => {
        const change = keyChange(original, fields);
        if (!change) return onDone(false);
        await api.updateKey(apiKey.id, change);
        onDone(true);
      })}
    >
      <KeyFieldInputs
        fields={fields}
        onChange={setFields}
        prefix="edit-key"
        placeholders={{
          requestsPerMinute: original.requestsPerMinute ? "plan's" : planned(formatLimit(apiKey.limits.requests_per_minute)),
          tokensPerMinute: original.tokensPerMinute ? "plan's" : planned(formatLimit(apiKey.limits.tokens_per_minute)),
          dailyBudget: original.dailyBudget ? "plan's" : planned(formatBudget(apiKey.budgets.daily_usd)),
          monthlyBudget: original.monthlyBudget ? "plan's" : planned(formatBudget(apiKey.budgets.monthly_usd)),
        }}
      />
      <p class="hint">Empty a field to go back to the plan's value. A plan change takes the new plan's limits where the key sets none.</p>
      <ErrorBanner error={error} testId="edit-key-error" />
      <div class="actions">
        <button type="submit" disabled={busy} data-testid="edit-key-save">
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" class="secondary" onClick={() => onDone(false)} data-testid="edit-key-cancel">
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A limit or budget cell, marked when the key overrides its plan. */
function Setting({ text, overridden }: { text: string; overridden: boolean }) {
  return (
    <td class="number">
      {overridden ? (
        <span class="override" title="Set on this key, over its plan">
          {text}*
        </span>
      ) : (
        <span>{text}</span>
      )}
    </td>
  );
}

/** One key's row, with its edit form and revocation below it when open. */
function KeyRow({
  api,
  apiKey,
  canChange,
  teamName,
  onChanged,
}: {
  api: AdminApi;
  apiKey: Key;
  canChange: boolean;
  teamName: string | undefined;
  onChanged: () => void;
}) {
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm-revoke'>('view');
  const { error, busy, run, clearError } = useAction(asApiError);
  const { overrides } = apiKey;
  return (
    <>
      <tr data-testid="key-row" data-key-id={apiKey.id} class={apiKey.revoked ? 'revoked' : undefined}>
        <td>
          <code>{apiKey.id}</code>
        </td>
        <td>{apiKey.name || <span class="muted">—</span>}</td>
        <td data-testid="key-plan">{apiKey.plan}</td>
        <td data-testid="key-team">{apiKey.team_id ? <span title={apiKey.team_id}>{teamName ?? apiKey.team_id}</span> : <span class="muted">—</span>}</td>
        <Setting text={formatLimit(apiKey.limits.requests_per_minute)} overridden={overrides.requests_per_minute !== undefined} />
        <Setting text={formatLimit(apiKey.limits.tokens_per_minute)} overridden={overrides.tokens_per_minute !== undefined} />
        <Setting text={formatBudget(apiKey.budgets.daily_usd)} overridden={overrides.daily_budget_usd !== undefined} />
        <Setting text={formatBudget(apiKey.budgets.monthly_usd)} overridden={overrides.monthly_budget_usd !== undefined} />
        <td data-testid="key-models">{apiKey.allowed_models ? apiKey.allowed_models.join(', ') || 'none' : <span class="muted">all</span>}</td>
        <td data-testid="key-revoked">{apiKey.revoked ? <span class="badge bad">revoked</span> : <span class="badge good">active</span>}</td>
        <td>{formatUnixSeconds(apiKey.last_used_at)}</td>
        <td>
          {canChange && !apiKey.revoked && mode === 'view' && (
            <div class="actions">
              <button type="button" class="secondary" onClick={() => setMode('edit')} data-testid="key-edit">
                Edit
              </button>
              <button type="button" class="danger" onClick={() => setMode('confirm-revoke')} data-testid="key-revoke">
                Revoke
              </button>
            </div>
          )}
        </td>
      </tr>
      {mode !== 'view' && (
        <tr class="detail">
          <td colSpan={11}>
            {mode === 'edit' && (
              <EditKeyForm
                api={api}
                apiKey={apiKey}
                onDone={(changed) => {
                  setMode('view');
                  if (changed) onChanged();
                }}
              />
            )}
            {mode === 'confirm-revoke' && (
              <ConfirmDialog
                testId="key-revoke"
                error={error}
                busy={busy}
                confirmLabel="Revoke key"
                onConfirm={() =>
                  run(async () => {
                    await api.revokeKey(apiKey.id);
                    setMode('view');
                    onChanged();
                  })
                }
                onCancel={() => {
                  setMode('view');
                  clearError();
                }}
              >
                Revoke <code>{apiKey.id}</code>
                {apiKey.name ? ` (${apiKey.name})` : ''}? Requests with it are refused at once. This cannot be undone.
              </ConfirmDialog>
            )}
          </td>
        </tr>
      )}
    </>
  );
}

/** The Keys page. */
export function KeysPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const keys = useLoader(() => api.listKeys(), [api]);
  const teams = useLoader(() => api.listTeams(), [api]);
  const teamNames = useMemo(() => new Map((teams.data ?? []).map((team) => [team.id, team.name])), [teams.data]);
  const [created, setCreated] = useState<CreatedKey | undefined>(undefined);
  // Newest first: the key just created is at the top, beside its secret.
  const list = useMemo(() => [...(keys.data ?? [])].sort((left, right) => right.created_at - left.created_at), [keys.data]);
  return (
    <Page name="keys" title="Keys" loaded={keys} tools={<RefreshButton loaded={keys} testId="keys-refresh" />}>
      {created && <SecretBox created={created} onDismiss={() => setCreated(undefined)} />}
      {canChange ? (
        <CreateKeyForm
          api={api}
          teams={teams.data ?? []}
          onCreated={(key) => {
            setCreated(key);
            keys.reload();
          }}
        />
      ) : (
        <p class="hint" data-testid="keys-read-only">
          Your role may only read: creating, changing and revoking keys needs the role admin.
        </p>
      )}
      <ErrorBanner error={keys.error} />
      <Table
        testId="keys-table"
        columns={[
          'Id',
          'Name',
          'Plan',
          'Team',
          { number: 'Requests / min' },
          { number: 'Tokens / min' },
          { number: 'Daily budget' },
          { number: 'Monthly budget' },
          'Models',
          'State',
          'Last used',
          '',
        ]}
      >
        {list.map((key) => (
          <KeyRow
            key={key.id}
            api={api}
            apiKey={key}
            canChange={canChange}
            teamName={key.team_id ? teamNames.get(key.team_id) : undefined}
            onChanged={keys.reload}
          />
        ))}
        <EmptyRow shown={keys.data !== undefined && list.length === 0} columns={11}>
          No keys yet.
        </EmptyRow>
      </Table>
      <p class="hint">* set on the key itself, over its plan.</p>
    </Page>
  );
}
