/**
 * Usage: spend over time per model and per key as charts, and the totals of the window per key,
 * per team and per model (the cost the response cache saved beside the cost), for one of four
 * ranges, of every key or of one. Three usage queries (grouped by model, by key, by team) on the
 * same buckets, and the key and team lists for names.
 */
import { useCallback, useMemo, useState } from 'preact/hooks';
import type { AdminApi, Key, Team, UsagePage as UsagePageJson, UsageResult } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { formatCount, formatUsd } from '../format';
import { SelectField } from '../fields';
import { KeyFilter, keyName } from '../key-filter';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { SpendChart } from '../spend-chart';
import { NO_TEAM, OTHER_SERIES, RANGES, spendSeries, totalsBy, usageWindow, type RangeId, type UsageTotals, type UsageWindow } from '../usage-series';
import { useLoader } from '../use-loader';

/** The page's choices as the hash keeps them (`#/usage?range=7d&key=key_...`), so a reload keeps them too. */
function choicesFromHash(): { range: RangeId; keyId: string } {
  const query = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const wanted = query.get('range');
  return { range: RANGES.find((range) => range.id === wanted)?.id ?? RANGES[0]!.id, keyId: query.get('key') ?? '' };
}

/** Writes the page's choices into the hash without a navigation. */
function keepChoices(range: RangeId, keyId: string): void {
  const query = new URLSearchParams({ range });
  if (keyId) query.set('key', keyId);
  history.replaceState(null, '', `#/usage?${query}`);
}

interface UsageData {
  window: UsageWindow;
  byModel: UsagePageJson;
  byKey: UsagePageJson;
  byTeam: UsagePageJson;
  keys: Key[];
  teams: Team[];
}

/** A key as the charts and tables name it: its name and id, or its id. */
function keyLabel(keys: ReadonlyMap<string, Key>, id: string): string {
  if (id === OTHER_SERIES) return 'other keys';
  const key = keys.get(id);
  return key ? keyName(key) : id;
}

/** One totals row; `testId` and `groupId` let a test find a key's or model's row. */
function TotalsRow({ label, totals, testId, groupId }: { label: string; totals: UsageTotals | UsageResult; testId: string; groupId?: string }) {
  return (
    <tr data-testid={testId} data-group-id={groupId}>
      <td>{label}</td>
      <td class="number" data-testid="usage-requests">
        {formatCount(totals.requests)}
      </td>
      <td class="number">{formatCount(totals.prompt_tokens)}</td>
      <td class="number">{formatCount(totals.completion_tokens)}</td>
      <td class="number">{formatCount(totals.cached_tokens)}</td>
      <td class="number" data-testid="usage-cost" data-cost-usd={String(totals.cost_usd)}>
        {formatUsd(totals.cost_usd)}
      </td>
      <td class="number" data-testid="usage-saved-cost" data-saved-cost-usd={String(totals.saved_cost_usd)}>
        {formatUsd(totals.saved_cost_usd)}
        {totals.cache_hits > 0 ? <span class="sub">{formatCount(totals.cache_hits)} cache hits</span> : null}
      </td>
      <td class="number">{formatCount(totals.errors)}</td>
      <td class="number">{formatCount(totals.fallbacks)}</td>
    </tr>
  );
}

/** The totals columns after a group's name. */
const TOTALS_COLUMNS = ['Requests', 'Prompt tokens', 'Completion tokens', 'Cached tokens', 'Cost', 'Saved by the cache', 'Errors', 'Fallbacks'];

/** The totals of each group over the window, and the window's totals. */
function TotalsTable({
  testId,
  title,
  rows,
  all,
  rowTestId,
}: {
  testId: string;
  title: string;
  rows: Array<{ id: string; label: string; totals: UsageTotals }>;
  all: UsageResult;
  rowTestId: string;
}) {
  return (
    <Table
      testId={testId}
      caption={title}
      columns={[title.replace(/^By /, '').replace(/^./, (first) => first.toUpperCase()), ...TOTALS_COLUMNS.map((column) => ({ number: column }))]}
      footer={<TotalsRow label="All" totals={all} testId={`${testId}-all`} />}
    >
      {rows.map((row) => (
        <TotalsRow key={row.id} label={row.label} totals={row.totals} testId={rowTestId} groupId={row.id} />
      ))}
      <EmptyRow shown={rows.length === 0} columns={9}>
        No usage in this range.
      </EmptyRow>
    </Table>
  );
}

/** The range's totals by key, by team and by model. */
function TotalsByGroup({ data, keys, teamNames }: { data: UsageData; keys: ReadonlyMap<string, Key>; teamNames: ReadonlyMap<string, string> }) {
  return (
    <>
      <TotalsTable
        testId="usage-totals-by-key"
        rowTestId="usage-key-row"
        title="By key"
        rows={totalsBy(data.byKey.data, 'key_id').map((row) => ({ ...row, label: keyLabel(keys, row.id) }))}
        all={data.byKey.totals}
      />
      <TotalsTable
        testId="usage-totals-by-team"
        rowTestId="usage-team-row"
        title="By team"
        rows={totalsBy(data.byTeam.data, 'team_id').map((row) => ({ ...row, label: teamNames.get(row.id) ?? (row.id === NO_TEAM ? 'no team' : row.id) }))}
        all={data.byTeam.totals}
      />
      <TotalsTable
        testId="usage-totals-by-model"
        rowTestId="usage-model-row"
        title="By model"
        rows={totalsBy(data.byModel.data, 'model').map((row) => ({ ...row, label: row.id }))}
        all={data.byModel.totals}
      />
    </>
  );
}

/** The Usage page. */
export function UsagePage({ api }: { api: AdminApi }) {
  const [rangeId, setRangeId] = useState<RangeId>(() => choicesFromHash().range);
  const [keyId, setKeyId] = useState(() => choicesFromHash().keyId);
  const range = RANGES.find((entry) => entry.id === rangeId)!;
  const usage = useLoader<UsageData>(async () => {
    const timeWindow = usageWindow(range, Date.now() / 1000);
    const query = { start: timeWindow.start, end: timeWindow.end, bucket: timeWindow.bucket, keyId: keyId || undefined };
    const [byModel, byKey, byTeam, keys, teams] = await Promise.all([
      api.usage({ ...query, groupBy: ['model'] }),
      api.usage({ ...query, groupBy: ['key'] }),
      api.usage({ ...query, groupBy: ['team'] }),
      api.keys.list(),
      api.teams.list(),
    ]);
    return { window: timeWindow, byModel, byKey, byTeam, keys, teams };
  }, [api, rangeId, keyId]);

  const data = usage.data;
  const keys = useMemo(() => new Map((data?.keys ?? []).map((key) => [key.id, key])), [data]);
  const teamNames = useMemo(() => new Map((data?.teams ?? []).map((team) => [team.id, `${team.name} (${team.id})`])), [data]);
  const modelSpend = useMemo(() => (data ? spendSeries(data.byModel.data, 'model', data.window.times) : undefined), [data]);
  const keySpend = useMemo(() => (data ? spendSeries(data.byKey.data, 'key_id', data.window.times) : undefined), [data]);
  const modelLabel = useCallback((id: string) => (id === OTHER_SERIES ? 'other models' : id), []);
  const labelKey = useCallback((id: string) => keyLabel(keys, id), [keys]);

  return (
    <Page
      name="usage"
      title="Usage"
      loaded={usage}
      tools={
        <>
          <SelectField
            inline
            label="Range"
            value={rangeId}
            testId="usage-range"
            options={RANGES.map((entry) => [entry.id, entry.label] as const)}
            onChange={(next) => {
              setRangeId(next);
              keepChoices(next, keyId);
            }}
          />
          <KeyFilter
            keys={data?.keys ?? []}
            value={keyId}
            testId="usage-key-filter"
            onChange={(next) => {
              setKeyId(next);
              keepChoices(rangeId, next);
            }}
          />
          <RefreshButton loaded={usage} testId="usage-refresh" />
        </>
      }
    >
      <ErrorBanner error={usage.error} />
      {(data?.byKey.has_more || data?.byModel.has_more) && <p class="warning">The gateway returned only part of this range; the figures are incomplete.</p>}
      <div class="charts">
        <SpendChart id="chart-spend-by-model" title="Spend per model (USD)" spend={modelSpend} label={modelLabel} />
        <SpendChart id="chart-spend-by-key" title="Spend per key (USD)" spend={keySpend} label={labelKey} />
      </div>
      {data && <TotalsByGroup data={data} keys={keys} teamNames={teamNames} />}
    </Page>
  );
}
