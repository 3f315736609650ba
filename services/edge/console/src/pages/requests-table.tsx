/**
 * The Requests page's table: a row per request (when it was received, its key and the key's name,
 * the model asked for and the one that answered, status, latency, cost, tokens, outcome and
 * fallbacks; a response-cache hit with a badge and the cost it saved), each time a button that
 * opens the request's detail where the request log is there.
 */
import type { GatewayRequest, LoggedRequest } from '../admin-api';
import { formatCount, formatMilliseconds, formatUnixMilliseconds, formatUsd } from '../format';
import { EmptyRow, Table } from '../page';

/** How a request ended, as a badge. */
function Outcome({ outcome }: { outcome: GatewayRequest['outcome'] }) {
  const tone = outcome === 'completed' ? 'good' : outcome === 'failed' || outcome === 'refused' ? 'bad' : 'neutral';
  return <span class={`badge ${tone}`}>{outcome}</span>;
}

/** A request answered from the response cache, as a badge beside its cost, with the cost it saved. */
function CacheHit({ request }: { request: GatewayRequest | LoggedRequest }) {
  if (request.cache_status !== 'hit') return null;
  return (
    <span class="sub" data-testid="request-cache-hit" data-saved-cost-usd={String(request.saved_cost_usd)}>
      <span class="badge good">cache hit</span> saved {formatUsd(request.saved_cost_usd)}
    </span>
  );
}

const isLogged = (request: GatewayRequest | LoggedRequest): request is LoggedRequest => 'api' in request;

/** The requests of a page; `log`: read from the request log (each opens its detail), else metering's latest. */
export function RequestsTable({
  list,
  log,
  names,
  caption,
  loaded,
  onOpen,
}: {
  list: ReadonlyArray<GatewayRequest | LoggedRequest>;
  log: boolean;
  /** Key id -> the key's name. */
  names: ReadonlyMap<string, string>;
  caption: string;
  /** Whether a page was answered (an empty one says so). */
  loaded: boolean;
  onOpen: (id: string) => void;
}) {
  return (
    <Table
      testId="requests-table"
      caption={caption}
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
        <RequestRow key={request.id} request={request} log={log} name={names.get(request.key_id)} onOpen={onOpen} />
      ))}
      <EmptyRow shown={loaded && list.length === 0} columns={10}>
        {log ? 'No request matches the search.' : 'No requests yet.'}
      </EmptyRow>
    </Table>
  );
}

/** One request's row. */
function RequestRow({
  request,
  log,
  name,
  onOpen,
}: {
  request: GatewayRequest | LoggedRequest;
  log: boolean;
  name: string | undefined;
  onOpen: (id: string) => void;
}) {
  return (
    <tr data-testid="request-row" data-request-id={request.request_id} data-key-id={request.key_id}>
      <td>
        {log ? (
          <button type="button" class="link" data-testid="request-open" onClick={() => onOpen(request.id)}>
            {formatUnixMilliseconds(request.created_at).replace(' UTC', '')}
          </button>
        ) : (
          formatUnixMilliseconds(request.created_at).replace(' UTC', '')
        )}
      </td>
      <td>
        <code>{request.key_id}</code>
        {name ? <span class="sub">{name}</span> : null}
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
      <td class="number" data-testid="request-latency" data-latency-ms={String(request.latency_ms)}>
        {formatMilliseconds(request.latency_ms)}
      </td>
      <td class="number" data-testid="request-cost" data-cost-usd={String(request.cost_usd)}>
        {formatUsd(request.cost_usd)}
        <CacheHit request={request} />
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
  );
}

/** The previous and next page of a search: `cursors` are those of the pages before the one shown. */
export function Pager({
  cursors,
  nextCursor,
  onCursors,
}: {
  cursors: string[];
  nextCursor: string | null | undefined;
  onCursors: (cursors: string[]) => void;
}) {
  return (
    <div class="actions">
      <button type="button" class="secondary" disabled={cursors.length === 0} data-testid="requests-previous" onClick={() => onCursors(cursors.slice(0, -1))}>
        Previous page
      </button>
      <button
        type="button"
        class="secondary"
        disabled={!nextCursor}
        data-testid="requests-next"
        onClick={() => nextCursor && onCursors([...cursors, nextCursor])}
      >
        Next page
      </button>
    </div>
  );
}
