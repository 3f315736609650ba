/**
 * Requests: with the request log (REQUEST_LOG_SERVICE_ADDR), a search of every request the
 * gateway handled within the log's retention: by time range, key, team, model, provider, deployment, status,
 * error code, API, outcome, latency and cost, ordered by time, latency or cost, a page at a time,
 * each request's detail (its ids, trace id, tokens, timings and user agent), and the search's
 * export as CSV or JSONL. Without the log, the latest requests metering keeps, optionally of one
 * key. Loaded on demand (Apply, Refresh), not polled.
 */
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import type { AdminApi, GatewayRequest, LoggedRequest, LoggedRequestDetail, RequestSearch } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { formatCount, formatMilliseconds, formatUnixMilliseconds, formatUsd } from '../format';
import { type Options, SelectField, TextField } from '../fields';
import { KeyFilter } from '../key-filter';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
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

/** How a request ended, as a badge. */
function Outcome({ outcome }: { outcome: GatewayRequest['outcome'] }) {
  const tone = outcome === 'completed' ? 'good' : outcome === 'failed' || outcome === 'refused' ? 'bad' : 'neutral';
  return <span class={`badge ${tone}`}>{outcome}</span>;
}

const isLogged = (request: GatewayRequest | LoggedRequest): request is LoggedRequest => 'api' in request;

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

/** One request's detail, read from the request log. */
function RequestDetail({ api, id, onClose }: { api: AdminApi; id: string; onClose: () => void }) {
  const detail = useLoader(() => api.request(id), [api, id]);
  const request = detail.data;
  const rows: Array<[string, string, string | number | null | undefined]> = request
    ? [
        ['Request id', 'request-detail-request-id', request.request_id],
        ['Event id', 'request-detail-id', request.id],
        ['Response id', 'request-detail-response-id', request.response_id],
        ['Trace id', 'request-detail-trace-id', request.trace_id],
        ['Received (UTC)', 'request-detail-time', formatUnixMilliseconds(request.created_at)],
        ['Key', 'request-detail-key', request.key_id],
        ['Team', 'request-detail-team', request.team_id],
        ['API', 'request-detail-api', request.api],
        ['Requested model', 'request-detail-requested-model', request.requested_model],
        ['Served by', 'request-detail-model', `${request.model} (${request.provider})`],
        ['Deployment', 'request-detail-deployment', request.deployment_id],
        ['Fell back from', 'request-detail-fallbacks', request.fallback_models.join(', ') || null],
        ['Outcome', 'request-detail-outcome', request.outcome],
        ['HTTP status', 'request-detail-status', request.http_status],
        ['Error code', 'request-detail-error-code', request.error_code],
        ['Streamed', 'request-detail-stream', request.stream ? 'yes' : 'no'],
        ['Latency', 'request-detail-latency', formatMilliseconds(request.latency_ms)],
        ['Time to first token', 'request-detail-ttft', request.time_to_first_token_ms === null ? null : formatMilliseconds(request.time_to_first_token_ms)],
        ['Input tokens', 'request-detail-prompt-tokens', formatCount(request.prompt_tokens)],
        ['of which cache reads, writes', 'request-detail-cache-tokens', `${formatCount(request.cached_tokens)}, ${formatCount(request.cache_write_tokens)}`],
        ['Output tokens', 'request-detail-completion-tokens', formatCount(request.completion_tokens)],
        ['of which reasoning', 'request-detail-reasoning-tokens', formatCount(request.reasoning_tokens)],
        ['Cost', 'request-detail-cost', `${formatUsd(request.cost_usd)} (${request.cost_pico_usd} pico-USD)`],
        ['User agent', 'request-detail-user-agent', request.user_agent],
      ]
    : [];
  const bodies = request?.bodies;
  return (
    <div class="card" data-testid="request-detail" data-state={detail.loading ? 'loading' : detail.error ? 'error' : 'ready'}>
      <div class="page-head">
        <h2>Request</h2>
        <button type="button" class="secondary" onClick={onClose} data-testid="request-detail-close">
          Close
        </button>
      </div>
      <ErrorBanner error={detail.error} />
      <dl class="details">
        {rows.map(([label, testId, value]) => (
          <Fragment key={testId}>
            <dt>{label}</dt>
            <dd data-testid={testId}>{value === null || value === undefined || value === '' ? <span class="muted">—</span> : <code>{String(value)}</code>}</dd>
          </Fragment>
        ))}
      </dl>
      {request && <GuardrailDecisions decisions={request.guardrails ?? []} />}
      {bodies && (
        <>
          <RequestBody label="Request body" testId="request-detail-request-body" text={bodies.request} cutBytes={bodies.request_truncated_bytes} />
          <RequestBody label="Answer" testId="request-detail-response-body" text={bodies.response} cutBytes={bodies.response_truncated_bytes} />
        </>
      )}
    </div>
  );
}

/** The guardrail decisions taken on one request: each policy's check, where, what it did and whether it was enforced. */
function GuardrailDecisions({ decisions }: { decisions: LoggedRequestDetail['guardrails'] }) {
  return (
    <>
      <h3>Guardrails</h3>
      {decisions.length === 0 ? (
        <p class="muted" data-testid="request-detail-guardrails-empty">
          No guardrail decisions on this request.
        </p>
      ) : (
        <table data-testid="request-detail-guardrails">
          <thead>
            <tr>
              <th>Policy</th>
              <th>Check</th>
              <th>Point</th>
              <th>Action</th>
              <th>Enforced</th>
              <th>Entity</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {decisions.map((decision, index) => (
              <tr key={index} data-testid="request-detail-guardrail">
                <td>{decision.policy}</td>
                <td>{decision.check}</td>
                <td>{decision.point}</td>
                <td>{decision.action}</td>
                <td>{decision.enforced ? 'enforced' : 'monitor'}</td>
                <td>{decision.entity || '—'}</td>
                <td>{decision.error || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** A kept body (redacted by the edge), indented when it is whole JSON, as it is otherwise. */
function RequestBody({ label, testId, text, cutBytes }: { label: string; testId: string; text: string; cutBytes: number }) {
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // A body cut by the cap is no JSON any more: shown as kept.
  }
  return (
    <>
      <h3>
        {label}
        {cutBytes > 0 && <span class="muted"> (cut: {cutBytes} bytes left out)</span>}
      </h3>
      <pre class="body" data-testid={testId}>
        {shown || '—'}
      </pre>
    </>
  );
}

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
      <Table
        testId="requests-table"
        caption={
          log
            ? `Requests matching the search, ${LIMIT} a page${cursors.length > 0 ? ` (page ${cursors.length + 1})` : ''}`
            : `The latest ${LIMIT} requests${search.keyId ? ` of ${search.keyId}` : ''}, newest first`
        }
        columns={[
          'Time (UTC)',
          'Key',
          'Requested',
          'Routed to',
          'Status',
          { number: 'Latency' },
          { number: 'Cost' },
          { number: 'Tokens in + out' },
          'Outcome',
          { number: 'Fallbacks' },
        ]}
      >
        {list.map((request) => (
          <tr key={request.id} data-testid="request-row" data-request-id={request.request_id} data-key-id={request.key_id}>
            <td>
              {log ? (
                <button type="button" class="link" data-testid="request-open" onClick={() => setOpened(request.id)}>
                  {formatUnixMilliseconds(request.created_at).replace(' UTC', '')}
                </button>
              ) : (
                formatUnixMilliseconds(request.created_at).replace(' UTC', '')
              )}
            </td>
            <td>
              <code>{request.key_id}</code>
              {names.get(request.key_id) ? <span class="sub">{names.get(request.key_id)}</span> : null}
            </td>
            <td data-testid="request-requested-model">{request.requested_model}</td>
            <td data-testid="request-model">
              {request.model}
              <span class="sub">
                {request.provider}
                {request.stream ? ', streamed' : ''}
                {isLogged(request) ? `, ${request.api}` : request.operation === 'embeddings' ? ', embeddings' : ''}
              </span>
            </td>
            <td data-testid="request-status">
              {isLogged(request) && request.http_status ? request.http_status : request.auto ? `auto ${request.auto.score.toFixed(2)}` : ''}
            </td>
            <td class="number">{formatMilliseconds(request.latency_ms)}</td>
            <td class="number" data-testid="request-cost" data-cost-usd={String(request.cost_usd)}>
              {formatUsd(request.cost_usd)}
            </td>
            <td class="number">
              {formatCount(request.prompt_tokens)} + {formatCount(request.completion_tokens)}
            </td>
            <td>
              <span data-testid="request-outcome">
                <Outcome outcome={request.outcome} />
              </span>
              {request.error_code ? <span class="sub">{request.error_code}</span> : null}
            </td>
            <td class="number">{formatCount(request.fallbacks)}</td>
          </tr>
        ))}
        <EmptyRow shown={requests.data !== undefined && list.length === 0} columns={10}>
          {log ? 'No request matches the search.' : 'No requests yet.'}
        </EmptyRow>
      </Table>
      {log && (
        <div class="actions">
          <button
            type="button"
            class="secondary"
            disabled={cursors.length === 0}
            data-testid="requests-previous"
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            Previous page
          </button>
          <button
            type="button"
            class="secondary"
            disabled={!requests.data?.nextCursor}
            data-testid="requests-next"
            onClick={() => requests.data?.nextCursor && setCursors([...cursors, requests.data.nextCursor])}
          >
            Next page
          </button>
        </div>
      )}
    </Page>
  );
}
