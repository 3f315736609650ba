/**
 * Requests: the latest requests the gateway handled, newest first, optionally of one key, with
 * where each was routed, what it cost and how it ended. Loaded on demand (Refresh), not polled.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, GatewayRequest } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { EmptyRow, Page, RefreshButton, Table, ToolSelect } from '../page';
import { formatCount, formatMilliseconds, formatUnixMilliseconds, formatUsd } from '../format';
import { useLoader } from '../use-loader';

const LIMIT = 50;

/** How a request ended, as a badge. */
function Outcome({ outcome }: { outcome: GatewayRequest['outcome'] }) {
  const tone = outcome === 'completed' ? 'good' : outcome === 'failed' ? 'bad' : 'neutral';
  return <span class={`badge ${tone}`}>{outcome}</span>;
}

/** The Requests page. */
export function RequestsPage({ api }: { api: AdminApi }) {
  const [keyId, setKeyId] = useState('');
  const keys = useLoader(() => api.listKeys(), [api]);
  const requests = useLoader(() => api.requests({ limit: LIMIT, keyId: keyId || undefined }), [api, keyId]);
  const names = new Map((keys.data ?? []).map((key) => [key.id, key.name]));
  const list = requests.data ?? [];
  return (
    <Page
      name="requests"
      title="Requests"
      loaded={requests}
      tools={
        <>
          <ToolSelect label="Key" value={keyId} testId="requests-key-filter" onChange={setKeyId}>
            <option value="">All keys</option>
            {(keys.data ?? []).map((key) => (
              <option key={key.id} value={key.id}>
                {key.name ? `${key.name} (${key.id})` : key.id}
              </option>
            ))}
          </ToolSelect>
          <RefreshButton loaded={requests} testId="requests-refresh" />
        </>
      }
    >
      <ErrorBanner error={requests.error ?? keys.error} />
      <Table
        testId="requests-table"
        caption={`The latest ${LIMIT} requests${keyId ? ` of ${keyId}` : ''}, newest first`}
        columns={[
          'Time (UTC)',
          'Key',
          'Requested',
          'Routed to',
          'Auto score, tier',
          { number: 'Latency' },
          { number: 'Cost' },
          { number: 'Tokens in + out' },
          'Outcome',
          { number: 'Fallbacks' },
        ]}
      >
        {list.map((request) => (
          <tr key={request.id} data-testid="request-row" data-request-id={request.request_id} data-key-id={request.key_id}>
            <td>{formatUnixMilliseconds(request.created_at).replace(' UTC', '')}</td>
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
                {request.operation === 'embeddings' ? ', embeddings' : ''}
              </span>
            </td>
            <td>{request.auto ? `${request.auto.score.toFixed(2)}, ${request.auto.tier}` : <span class="muted">—</span>}</td>
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
          No requests yet.
        </EmptyRow>
      </Table>
    </Page>
  );
}
