/**
 * Keys: every API key with its plan, team, limits, budgets and state; a form that creates one (in
 * a team, chosen once for good) and shows its secret once; per key, a form that changes its plan,
 * name, limits and budgets, and a revocation that asks to be confirmed. A viewer (canChange false)
 * sees the list only.
 */
import { useMemo, useState } from 'preact/hooks';
import { CreateForm, EditForm, fieldFailure } from '../action-forms';
import { PLANS, type AdminApi, type CreatedKey, type Key, type Plan, type Team } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { SelectField, TextField } from '../fields';
import { apiSettings, fieldsOfKey, keyChange, setOnly, type KeyFields } from '../key-fields';
import { formatBudget, formatLimit, formatUnixSeconds } from '../format';
import { LimitFieldInputs, type LimitFieldInputsProps, type LimitPlaceholders } from '../limit-field-inputs';
import { ManagedRow, type RemovalButtons } from '../managed-row';
import { AdminOnly, type Column, EmptyRow, Page, RefreshButton, Table } from '../page';
import { SecretBox } from '../secret-box';
import { useLoader } from '../use-loader';

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

const PLAN_OPTIONS = PLANS.map((plan) => [plan, plan] as const);

/** Every limit and budget left empty follows the plan. */
const PLANS_VALUES: LimitPlaceholders = { requestsPerMinute: "plan's", tokensPerMinute: "plan's", dailyBudget: "plan's", monthlyBudget: "plan's" };

/** The plan and name inputs of both key forms, then the limit ones; `prefix` names their test ids. */
function KeyFieldInputs(props: LimitFieldInputsProps<KeyFields>) {
  const { fields, onChange, prefix } = props;
  return (
    <div class="fields">
      <TextField label="Name" value={fields.name} testId={`${prefix}-name`} placeholder="optional" onInput={(name) => onChange({ ...fields, name })} />
      <SelectField
        label="Plan"
        value={fields.plan as Plan}
        testId={`${prefix}-plan`}
        options={PLAN_OPTIONS}
        onChange={(plan) => onChange({ ...fields, plan })}
      />
      <LimitFieldInputs {...props} />
    </div>
  );
}

/** Creates a key; what is left empty follows the plan. */
function CreateKeyForm({ api, teams, onCreated }: { api: AdminApi; teams: readonly Team[]; onCreated: (key: CreatedKey) => void }) {
  const [fields, setFields] = useState<KeyFields>(EMPTY_FIELDS);
  const [teamId, setTeamId] = useState('');
  const teamOptions = [['', 'no team'] as const, ...teams.map((team) => [team.id, `${team.name} (${team.id})`] as const)];
  const create = async () => {
    const settings = setOnly(apiSettings(fields, (parsed) => parsed));
    const name = fields.name.trim();
    // The create form starts from a plan it offers and offers only those: never `unknown`.
    onCreated(await api.keys.create({ plan: fields.plan as Plan, ...(name ? { name } : {}), ...settings, ...(teamId ? { team_id: teamId } : {}) }));
    setFields(EMPTY_FIELDS);
    setTeamId('');
  };
  return (
    <CreateForm testId="create-key" title="Create a key" label="Create key" failure={fieldFailure} onSubmit={create}>
      <KeyFieldInputs fields={fields} onChange={setFields} prefix="create-key" placeholders={PLANS_VALUES} />
      <div class="fields">
        <SelectField label="Team" value={teamId} testId="create-key-team" options={teamOptions} onChange={setTeamId} />
      </div>
      <p class="hint">
        Leave a limit or budget empty to follow the plan; type <code>unlimited</code> to lift it. Allowed models: ids and <code>prefix*</code> patterns,
        separated by commas; empty for every model. A key's team is chosen here, for good: its team's limits, budgets and allowed models apply besides its own.
      </p>
    </CreateForm>
  );
}

/** Changes a key's plan, name, limits and budgets with one PATCH of what changed. */
function EditKeyForm({ api, apiKey, onDone }: { api: AdminApi; apiKey: Key; onDone: (changed: boolean) => void }) {
  const original = fieldsOfKey(apiKey);
  const [fields, setFields] = useState<KeyFields>(original);
  const planned = (value: string) => `plan's (${value})`;
  const save = async () => {
    const change = keyChange(original, fields);
    if (!change) return onDone(false);
    await api.keys.update(apiKey.id, change);
    onDone(true);
  };
  return (
    <EditForm testId="edit-key" failure={fieldFailure} onSubmit={save} onCancel={() => onDone(false)}>
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
    </EditForm>
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
/** A key's revocation: its button and confirmation. */
const REVOKE_KEY: RemovalButtons = { testId: 'key-revoke', label: 'Revoke', confirmLabel: 'Revoke key' };

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
  const { overrides } = apiKey;
  return (
    <ManagedRow
      row={{ 'data-testid': 'key-row', 'data-key-id': apiKey.id, ...(apiKey.revoked && { class: 'revoked' }) }}
      id={apiKey.id}
      collection={api.keys}
      canChange={canChange && !apiKey.revoked}
      onChanged={onChanged}
      edit={{ testId: 'key-edit', form: (onDone) => <EditKeyForm api={api} apiKey={apiKey} onDone={onDone} /> }}
      removal={{
        ...REVOKE_KEY,
        question: (
          <>
            Revoke <code>{apiKey.id}</code>
            {apiKey.name ? ` (${apiKey.name})` : ''}? Requests with it are refused at once. This cannot be undone.
          </>
        ),
      }}
    >
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
    </ManagedRow>
  );
}

/** The keys table's columns; the last holds a key's buttons. */
const KEY_COLUMNS: Column[] = [
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
];

/** The Keys page. */
export function KeysPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const keys = useLoader(() => api.keys.list(), [api]);
  const teams = useLoader(() => api.teams.list(), [api]);
  const teamNames = useMemo(() => new Map((teams.data ?? []).map((team) => [team.id, team.name])), [teams.data]);
  const [created, setCreated] = useState<CreatedKey | undefined>(undefined);
  // Newest first: the key just created is at the top, beside its secret.
  const list = useMemo(() => [...(keys.data ?? [])].sort((left, right) => right.created_at - left.created_at), [keys.data]);
  return (
    <Page name="keys" title="Keys" loaded={keys} tools={<RefreshButton loaded={keys} testId="keys-refresh" />}>
      {created && (
        <SecretBox testId="new-key" title={`Key created: ${created.name || created.id}`} secret={created.secret} onDismiss={() => setCreated(undefined)}>
          <p>
            Key id <code data-testid="new-key-id">{created.id}</code>, plan {created.plan}. Its secret:
          </p>
        </SecretBox>
      )}
      <AdminOnly canChange={canChange} name="keys" changes="creating, changing and revoking keys">
        <CreateKeyForm
          api={api}
          teams={teams.data ?? []}
          onCreated={(key) => {
            setCreated(key);
            keys.reload();
          }}
        />
      </AdminOnly>
      <ErrorBanner error={keys.error} />
      <Table testId="keys-table" columns={KEY_COLUMNS}>
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
