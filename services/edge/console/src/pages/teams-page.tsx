/**
 * Teams: every team with its limits, budgets, allowed models and live keys; a form that creates
 * one; per team, a form that changes its name, limits, budgets and allowed models, and a deletion
 * that asks to be confirmed (refused while the team has live keys). A team's limits apply over all
 * its keys, on top of each key's own.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, ApiError, Team, TeamChange, TeamCreation } from '../admin-api';
import { ConfirmDialog } from '../confirm-dialog';
import { ErrorBanner } from '../error-banner';
import { formatBudget, formatLimit } from '../format';
import { FieldError, parseBudget, parseLimit } from '../key-fields';
import { EmptyRow, Page, RefreshButton, SubmitRow, Table } from '../page';
import { useAction } from '../use-action';
import { asApiError, useLoader } from '../use-loader';

/** A team's form as typed: empty is none. */
interface TeamFields {
  name: string;
  requestsPerMinute: string;
  tokensPerMinute: string;
  dailyBudget: string;
  monthlyBudget: string;
  /** Model ids and `prefix*` patterns, comma-separated; empty: every model. */
  allowedModels: string;
  /** Whether the request log keeps the bodies of every request of the team's keys. */
  logBodies: boolean;
}

const EMPTY: TeamFields = { name: '', requestsPerMinute: '', tokensPerMinute: '', dailyBudget: '', monthlyBudget: '', allowedModels: '', logBodies: false };

function formError(error: unknown): ApiError | string {
  return error instanceof FieldError ? error.message : asApiError(error);
}

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

/** A limit or budget typed: a number, or null for none (empty or "unlimited"). */
function numberOrNone(parsed: number | 'unlimited' | undefined): number | null {
  return typeof parsed === 'number' ? parsed : null;
}

/** The settings a form sets: limits and budgets (null: none), and the allow-list (null: every model). */
function settingsOf(fields: TeamFields) {
  const models = fields.allowedModels
    .split(',')
    .map((model) => model.trim())
    .filter(Boolean);
  return {
    limits: {
      requests_per_minute: numberOrNone(parseLimit(fields.requestsPerMinute, 'Requests / min')),
      tokens_per_minute: numberOrNone(parseLimit(fields.tokensPerMinute, 'Tokens / min')),
    },
    budgets: {
      daily_usd: numberOrNone(parseBudget(fields.dailyBudget, 'Daily budget')),
      monthly_usd: numberOrNone(parseBudget(fields.monthlyBudget, 'Monthly budget')),
    },
    allowed_models: models.length > 0 ? models : null,
    log_bodies: fields.logBodies,
  };
}

function TeamFieldInputs({ fields, onChange, prefix }: { fields: TeamFields; onChange: (fields: TeamFields) => void; prefix: string }) {
  const input = (field: Exclude<keyof TeamFields, 'logBodies'>, label: string, testId: string, placeholder: string) => (
    <label>
      {label}
      <input
        type="text"
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
      {input('name', 'Name', 'name', 'required')}
      {input('requestsPerMinute', 'Requests / min', 'rpm', 'none')}
      {input('tokensPerMinute', 'Tokens / min', 'tpm', 'none')}
      {input('dailyBudget', 'Daily budget (USD)', 'daily', 'none')}
      {input('monthlyBudget', 'Monthly budget (USD)', 'monthly', 'none')}
      {input('allowedModels', 'Allowed models', 'models', 'every model')}
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

function CreateTeamForm({ api, onCreated }: { api: AdminApi; onCreated: () => void }) {
  const [fields, setFields] = useState<TeamFields>(EMPTY);
  const { error, busy, submit } = useAction(formError);
  return (
    <form
      class="card"
      data-testid="create-team-form"
      onSubmit={submit(async () => {
        const settings = settingsOf(fields);
        const creation: TeamCreation = { name: fields.name.trim() };
        const limits = Object.fromEntries(Object.entries(settings.limits).filter(([, value]) => value !== null));
        const budgets = Object.fromEntries(Object.entries(settings.budgets).filter(([, value]) => value !== null));
        if (Object.keys(limits).length > 0) creation.limits = limits;
        if (Object.keys(budgets).length > 0) creation.budgets = budgets;
        if (settings.allowed_models) creation.allowed_models = settings.allowed_models;
        if (settings.log_bodies) creation.log_bodies = true;
        await api.createTeam(creation);
        setFields(EMPTY);
        onCreated();
      })}
    >
      <h2>Create a team</h2>
      <TeamFieldInputs fields={fields} onChange={setFields} prefix="create-team" />
      <p class="hint">
        A team's limits and budgets apply over all its keys, besides each key's own; leave one empty for none. Allowed models: ids or <code>prefix*</code>,
        comma-separated.
      </p>
      <SubmitRow error={error} errorTestId="create-team-error" busy={busy} label="Create team" busyLabel="Creating…" testId="create-team-submit" />
    </form>
  );
}

function EditTeamForm({ api, team, onDone }: { api: AdminApi; team: Team; onDone: (changed: boolean) => void }) {
  const [fields, setFields] = useState<TeamFields>(fieldsOfTeam(team));
  const { error, busy, submit } = useAction(formError);
  return (
    <form
      class="edit"
      data-testid="edit-team-form"
      onSubmit={submit(async () => {
        const change: TeamChange = { name: fields.name.trim(), ...settingsOf(fields) };
        await api.updateTeam(team.id, change);
        onDone(true);
      })}
    >
      <TeamFieldInputs fields={fields} onChange={setFields} prefix="edit-team" />
      <ErrorBanner error={error} testId="edit-team-error" />
      <div class="actions">
        <button type="submit" disabled={busy} data-testid="edit-team-save">
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" class="secondary" onClick={() => onDone(false)} data-testid="edit-team-cancel">
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A team's limit: a number, or none. */
function limitText(limit: number | null): string {
  return limit === null ? 'none' : formatLimit(limit);
}

function TeamRow({ api, team, canChange, onChanged }: { api: AdminApi; team: Team; canChange: boolean; onChanged: () => void }) {
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm-delete'>('view');
  const { error, busy, run, clearError } = useAction(asApiError);
  return (
    <>
      <tr data-testid="team-row" data-team-id={team.id}>
        <td>
          <code>{team.id}</code>
        </td>
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
        <td>
          {canChange && mode === 'view' && (
            <div class="actions">
              <button type="button" class="secondary" onClick={() => setMode('edit')} data-testid="team-edit">
                Edit
              </button>
              <button type="button" class="danger" onClick={() => setMode('confirm-delete')} data-testid="team-delete">
                Delete
              </button>
            </div>
          )}
        </td>
      </tr>
      {mode !== 'view' && (
        <tr class="detail">
          <td colSpan={9}>
            {mode === 'edit' && (
              <EditTeamForm
                api={api}
                team={team}
                onDone={(changed) => {
                  setMode('view');
                  if (changed) onChanged();
                }}
              />
            )}
            {mode === 'confirm-delete' && (
              <ConfirmDialog
                testId="team-delete"
                error={error}
                busy={busy}
                confirmLabel="Delete team"
                onConfirm={() =>
                  run(async () => {
                    await api.deleteTeam(team.id);
                    setMode('view');
                    onChanged();
                  })
                }
                onCancel={() => {
                  setMode('view');
                  clearError();
                }}
              >
                Delete the team <code>{team.id}</code> ({team.name})? A team is deleted only once all its keys are revoked.
              </ConfirmDialog>
            )}
          </td>
        </tr>
      )}
    </>
  );
}

/** The Teams page; a viewer (canChange false) sees the list only, with no button that changes a team. */
export function TeamsPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const teams = useLoader(() => api.listTeams(), [api]);
  const list = [...(teams.data ?? [])].sort((left, right) => right.created_at - left.created_at);
  return (
    <Page name="teams" title="Teams" loaded={teams} tools={<RefreshButton loaded={teams} testId="teams-refresh" />}>
      {canChange ? (
        <CreateTeamForm api={api} onCreated={teams.reload} />
      ) : (
        <p class="hint" data-testid="teams-read-only">
          Your role may only read: creating, changing and deleting teams needs the role admin.
        </p>
      )}
      <ErrorBanner error={teams.error} />
      <Table
        testId="teams-table"
        columns={[
          'Id',
          'Name',
          { number: 'Requests / min' },
          { number: 'Tokens / min' },
          { number: 'Daily budget' },
          { number: 'Monthly budget' },
          'Allowed models',
          { number: 'Live keys' },
          '',
        ]}
      >
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
