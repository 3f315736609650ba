/**
 * Teams: every team with its limits, budgets, allowed models and live keys; a form that creates
 * one; per team, a form that changes its name, limits, budgets and allowed models, and a deletion
 * that asks to be confirmed (refused while the team has live keys). A team's limits apply over all
 * its keys, on top of each key's own.
 */
import { useState } from 'preact/hooks';
import { CreateForm, EditForm, fieldFailure } from '../action-forms';
import type { AdminApi, Team } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { TextField } from '../fields';
import { formatBudget, formatLimit } from '../format';
import { apiSettings, setOnly, type LimitFields } from '../key-fields';
import { LimitFieldInputs } from '../limit-field-inputs';
import { ManagedRow, type RemovalButtons } from '../managed-row';
import { AdminOnly, type Column, EmptyRow, Page, RefreshButton, Table } from '../page';
import { useLoader } from '../use-loader';

/** A team's form as typed: empty is none. */
interface TeamFields extends LimitFields {
  name: string;
}

const EMPTY: TeamFields = { name: '', requestsPerMinute: '', tokensPerMinute: '', dailyBudget: '', monthlyBudget: '', allowedModels: '', logBodies: false };

const NONE = { requestsPerMinute: 'none', tokensPerMinute: 'none', dailyBudget: 'none', monthlyBudget: 'none' };

/** A team's fields as its form shows them. */
function fieldsOfTeam(team: Team): TeamFields {
  const text = (value: number | null) => (value === null ? '' : String(value));
  return {
    name: team.name,
    requestsPerMinute: text(team.limits.requests_per_minute),
    tokensPerMinute: text(team.limits.tokens_per_minute),
    dailyBudget: text(team.budgets.daily_usd),
    monthlyBudget: text(team.budgets.monthly_usd),
    allowedModels: team.allowed_models?.join(', ') ?? '',
    logBodies: team.log_bodies,
  };
}

/** The settings a form sets: limits and budgets (null: none, empty or "unlimited"), and the allow-list (null: every model). */
function settingsOf(fields: TeamFields) {
  return apiSettings(fields, (parsed) => (typeof parsed === 'number' ? parsed : null));
}

function TeamFieldInputs({ fields, onChange, prefix }: { fields: TeamFields; onChange: (fields: TeamFields) => void; prefix: string }) {
  return (
    <div class="fields">
      <TextField label="Name" value={fields.name} testId={`${prefix}-name`} placeholder="required" onInput={(name) => onChange({ ...fields, name })} />
      <LimitFieldInputs fields={fields} onChange={onChange} prefix={prefix} placeholders={NONE} />
    </div>
  );
}

function CreateTeamForm({ api, onCreated }: { api: AdminApi; onCreated: () => void }) {
  const [fields, setFields] = useState<TeamFields>(EMPTY);
  const create = async () => {
    await api.teams.create({ name: fields.name.trim(), ...setOnly(settingsOf(fields)) });
    setFields(EMPTY);
    onCreated();
  };
  return (
    <CreateForm testId="create-team" title="Create a team" label="Create team" failure={fieldFailure} onSubmit={create}>
      <TeamFieldInputs fields={fields} onChange={setFields} prefix="create-team" />
      <p class="hint">
        A team's limits and budgets apply over all its keys, besides each key's own; leave one empty for none. Allowed models: ids or <code>prefix*</code>,
        comma-separated.
      </p>
    </CreateForm>
  );
}

function EditTeamForm({ api, team, onDone }: { api: AdminApi; team: Team; onDone: (changed: boolean) => void }) {
  const [fields, setFields] = useState<TeamFields>(fieldsOfTeam(team));
  const save = async () => {
    await api.teams.update(team.id, { name: fields.name.trim(), ...settingsOf(fields) });
    onDone(true);
  };
  return (
    <EditForm testId="edit-team" failure={fieldFailure} onSubmit={save} onCancel={() => onDone(false)}>
      <TeamFieldInputs fields={fields} onChange={setFields} prefix="edit-team" />
    </EditForm>
  );
}

/** A team's limit: a number, or none. */
function limitText(limit: number | null): string {
  return limit === null ? 'none' : formatLimit(limit);
}

/** A team's deletion: its button and confirmation. */
const DELETE_TEAM: RemovalButtons = { testId: 'team-delete', label: 'Delete', confirmLabel: 'Delete team' };

function TeamRow({ api, team, canChange, onChanged }: { api: AdminApi; team: Team; canChange: boolean; onChanged: () => void }) {
  return (
    <ManagedRow
      row={{ 'data-testid': 'team-row', 'data-team-id': team.id }}
      id={team.id}
      collection={api.teams}
      canChange={canChange}
      onChanged={onChanged}
      edit={{ testId: 'team-edit', form: (onDone) => <EditTeamForm api={api} team={team} onDone={onDone} /> }}
      removal={{
        ...DELETE_TEAM,
        question: (
          <>
            Delete the team <code>{team.id}</code> ({team.name})? A team is deleted only once all its keys are revoked.
          </>
        ),
      }}
    >
      <td data-testid="team-name">{team.name}</td>
      <td class="number">{limitText(team.limits.requests_per_minute)}</td>
      <td class="number">{limitText(team.limits.tokens_per_minute)}</td>
      <td class="number" data-testid="team-daily">
        {formatBudget(team.budgets.daily_usd)}
      </td>
      <td class="number">{formatBudget(team.budgets.monthly_usd)}</td>
      <td>{team.allowed_models ? team.allowed_models.join(', ') : <span class="muted">every model</span>}</td>
      <td class="number" data-testid="team-keys">
        {team.key_count}
      </td>
    </ManagedRow>
  );
}

/** The teams table's columns; the last holds a team's buttons. */
const TEAM_COLUMNS: Column[] = [
  'Id',
  'Name',
  { number: 'Requests / min' },
  { number: 'Tokens / min' },
  { number: 'Daily budget' },
  { number: 'Monthly budget' },
  'Allowed models',
  { number: 'Live keys' },
  '',
];

/** The Teams page; a viewer (canChange false) sees the list only, with no button that changes a team. */
export function TeamsPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const teams = useLoader(() => api.teams.list(), [api]);
  const list = [...(teams.data ?? [])].sort((left, right) => right.created_at - left.created_at);
  return (
    <Page name="teams" title="Teams" loaded={teams} tools={<RefreshButton loaded={teams} testId="teams-refresh" />}>
      <AdminOnly canChange={canChange} name="teams" changes="creating, changing and deleting teams">
        <CreateTeamForm api={api} onCreated={teams.reload} />
      </AdminOnly>
      <ErrorBanner error={teams.error} />
      <Table testId="teams-table" columns={TEAM_COLUMNS}>
        {list.map((team) => (
          <TeamRow key={team.id} api={api} team={team} canChange={canChange} onChanged={teams.reload} />
        ))}
        <EmptyRow shown={teams.data !== undefined && list.length === 0} columns={9}>
          No teams yet.
        </EmptyRow>
      </Table>
    </Page>
  );
}
