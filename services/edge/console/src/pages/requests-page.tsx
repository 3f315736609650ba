/**
 * Requests: with the request log (REQUEST_LOG_SERVICE_ADDR), a search of every request the
 * gateway handled within the log's retention: by time range, key, team, model, provider, deployment, status,
 * error code, API, outcome, latency and cost, ordered by time, latency or cost, a page at a time,
 * each request's detail (its ids, trace id, tokens, timings and user agent: request-detail.tsx), and
 * the search's export as CSV or JSONL. Without the log, the latest requests metering keeps,
 * optionally of one key (the table: requests-table.tsx). Loaded on demand (Apply, Refresh), not
 * polled.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, RequestSearch } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { type Options, SelectField, TextField } from '../fields';
import { KeyFilter } from '../key-filter';
import { RequestDetail } from './request-detail';
import { Pager, RequestsTable } from './requests-table';
import { Page, RefreshButton } from '../page';
import { asApiError, useLoader } from '../use-loader';

const LIMIT = 50;

/** The search before the operator narrows it: the last 24 hours, newest first. */
const NO_FILTERS: RequestSearch = {
  sinceSeconds: 86_400,
  keyId: '',
  teamId: '',
  model: '',
  provider: '',
  deployment: '',
  status: '',
  errorCode: '',
  api: '',
  outcome: '',
  minLatencyMs: '',
  maxLatencyMs: '',
  minCostUsd: '',
  maxCostUsd: '',
  sort: 'time',
  order: 'desc',
};

/** How far back a search looks, in seconds (0: the log's whole retention). */
const RANGES: Options<string> = [
  [String(3_600), 'Last hour'],
  [String(86_400), 'Last 24 hours'],
  [String(7 * 86_400), 'Last 7 days'],
  ['0', 'Everything kept'],
];

/** A choice of any value, then each of `values`, shown as it is sent with its underscores as spaces. */
const anyOf = (values: readonly string[]): Options<string> => [['', 'any'], ...values.map((value) => [value, value.replaceAll('_', ' ')] as const)];

const APIS = anyOf(['chat_completions', 'responses', 'messages', 'embeddings']);
const OUTCOMES = anyOf(['completed', 'failed', 'cancelled', 'refused']);

/** The orders a search offers, as `<sort> <order>`. */
const ORDERS: Options<`${RequestSearch['sort']} ${RequestSearch['order']}`> = [
  ['time desc', 'newest first'],
  ['time asc', 'oldest first'],
  ['latency desc', 'slowest first'],
  ['cost desc', 'dearest first'],
];

/** The text fields of the search form: [field, label, test id, placeholder]. */
const TEXT_FILTERS: ReadonlyArray<[keyof RequestSearch, string, string, string]> = [
  ['teamId', 'Team', 'requests-team', 'team_...'],
  ['model', 'Model', 'requests-model', 'requested or served'],
  ['provider', 'Provider', 'requests-provider', 'simulated, anthropic, ...'],
  ['deployment', 'Deployment', 'requests-deployment', '0:https://api.openai.com'],
  ['status', 'HTTP status', 'requests-status', '429'],
  ['errorCode', 'Error code', 'requests-error-code', 'upstream_error'],
  ['minLatencyMs', 'Latency from (ms)', 'requests-min-latency', ''],
  ['maxLatencyMs', 'Latency to (ms)', 'requests-max-latency', ''],
  ['minCostUsd', 'Cost from (USD)', 'requests-min-cost', ''],
  ['maxCostUsd', 'Cost to (USD)', 'requests-max-cost', ''],
];

/** The request log's search: the form being edited (`draft`), Search, Clear, and the exports of the search applied. */
function SearchForm({
  draft,
  onDraft,
  onApply,
  onExport,
}: {
  draft: RequestSearch;
  onDraft: (draft: RequestSearch) => void;
  onApply: (search: RequestSearch) => void;
  onExport: (format: 'csv' | 'jsonl') => void;
}) {
  const select = (field: 'api' | 'outcome', label: string, options: Options<string>) => (
    <SelectField
      label={label}
      value={draft[field]}
      testId={`requests-${field}`}
      options={options}
      onChange={(value) => onDraft({ ...draft, [field]: value })}
    />
  );
  return (
    <form
      class="card"
      data-testid="requests-filters"
      onSubmit={(event) => {
        event.preventDefault();
        onApply(draft);
      }}
    >
      <div class="fields">
        <SelectField
          label="Time"
          value={String(draft.sinceSeconds)}
          testId="requests-range"
          options={RANGES}
          onChange={(seconds) => onDraft({ ...draft, sinceSeconds: Number(seconds) })}
        />
        {select('api', 'API', APIS)}
        {select('outcome', 'Outcome', OUTCOMES)}
        {TEXT_FILTERS.map(([field, label, testId, placeholder]) => (
          <TextField
            key={field}
            label={label}
            value={String(draft[field])}
            testId={testId}
            placeholder={placeholder}
            onInput={(value) => onDraft({ ...draft, [field]: value })}
          />
        ))}
        <SelectField
          label="Order by"
          value={`${draft.sort} ${draft.order}`}
          testId="requests-sort"
          options={ORDERS}
          onChange={(value) => {
            const [sort, order] = value.split(' ') as [RequestSearch['sort'], RequestSearch['order']];
            onDraft({ ...draft, sort, order });
          }}
        />
      </div>
      <div class="actions">
        <button type="button" class="secondary" data-testid="requests-clear" onClick={() => onApply(NO_FILTERS)}>
          Clear
        </button>
        <button type="button" class="secondary" data-testid="requests-export-csv" onClick={() => onExport('csv')}>
          Export CSV
        </button>
        <button type="button" class="secondary" data-testid="requests-export-jsonl" onClick={() => onExport('jsonl')}>
          Export JSONL
        </button>
        <button type="submit" data-testid="requests-apply">
          Search
        </button>
      </div>
    </form>
  );
}

/** The Requests page. */
export function RequestsPage({ api }: { api: AdminApi }) {
  // The search applied, the form being edited, and the cursors of the pages before the one shown.
  const [search, setSearch] = useState<RequestSearch>(NO_FILTERS);
  const [draft, setDraft] = useState<RequestSearch>(NO_FILTERS);
  const [cursors, setCursors] = useState<string[]>([]);
  const [log, setLog] = useState<boolean | undefined>(undefined);
  const [opened, setOpened] = useState<string | undefined>(undefined);
  const [exportError, setExportError] = useState<ReturnType<typeof asApiError> | undefined>(undefined);
  const keys = useLoader(() => api.keys.list(), [api]);
  const cursor = cursors.at(-1);
  const requests = useLoader(async () => {
    // The first answer tells whether the log is there; a plain page is what every gateway answers.
    const page = await api.requestsPage(search, { log: log === true, limit: LIMIT, cursor });
    if (log === undefined) setLog(page.log);
    return page;
  }, [api, search, cursor, log]);
  const names = new Map((keys.data ?? []).map((key) => [key.id, key.name]));
  const list = requests.data?.data ?? [];
  const apply = (next: RequestSearch) => {
    setSearch(next);
    setDraft(next);
    setCursors([]);
  };
  return (
    <Page
      name="requests"
      title="Requests"
      loaded={requests}
      tools={
        <>
          <KeyFilter keys={keys.data ?? []} value={search.keyId} testId="requests-key-filter" onChange={(keyId) => apply({ ...draft, keyId })} />
          <RefreshButton loaded={requests} testId="requests-refresh" />
        </>
      }
    >
      <ErrorBanner error={requests.error ?? keys.error ?? exportError} />
      {log === false && (
        <p class="hint" data-testid="requests-log-off">
          The request log is not configured (REQUEST_LOG_SERVICE_ADDR): these are the latest requests metering keeps. Search, details and exports need the log.
        </p>
      )}
      {log === true && (
        <SearchForm
          draft={draft}
          onDraft={setDraft}
          onApply={apply}
          onExport={(format) =>
            api.downloadRequests(search, format).then(
              () => setExportError(undefined),
              (error: unknown) => setExportError(asApiError(error)),
            )
          }
        />
      )}
      {opened && <RequestDetail api={api} id={opened} onClose={() => setOpened(undefined)} />}
      <RequestsTable
        list={list}
        log={log === true}
        names={names}
        caption={
          log
            ? `Requests matching the search, ${LIMIT} a page${cursors.length > 0 ? ` (page ${cursors.length + 1})` : ''}`
            : `The latest ${LIMIT} requests${search.keyId ? ` of ${search.keyId}` : ''}, newest first`
        }
        loaded={requests.data !== undefined}
        onOpen={setOpened}
      />
      {log && <Pager cursors={cursors} nextCursor={requests.data?.nextCursor} onCursors={setCursors} />}
    </Page>
  );
}
