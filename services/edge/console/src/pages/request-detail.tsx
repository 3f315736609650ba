/**
 * One request's detail in the Requests page, read from the request log: its ids, trace id, key,
 * team, model, outcome, timings, tokens and cost, what the response cache did (a hit: the cost it
 * saved), the guardrail decisions made for it, and its bodies where the log kept them and the
 * caller may read them.
 */
import { Fragment } from 'preact';
import type { AdminApi, LoggedRequestDetail } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { formatCount, formatMilliseconds, formatUnixMilliseconds, formatUsd } from '../format';
import { useLoader } from '../use-loader';

/** One request's detail, read from the request log. */
export function RequestDetail({ api, id, onClose }: { api: AdminApi; id: string; onClose: () => void }) {
  const detail = useLoader(() => api.request(id), [api, id]);
  const request = detail.data;
  const rows = request ? detailRows(request) : [];
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

/** The rows of a request's detail: label, test id, value (empty values show a dash). */
function detailRows(request: LoggedRequestDetail): Array<[string, string, string | number | null | undefined]> {
  return [
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
    ['Response cache', 'request-detail-cache', request.cache_status === 'hit' ? 'cache hit' : request.cache_status],
    [
      'Saved by the cache',
      'request-detail-saved-cost',
      request.cache_status === 'hit' ? `${formatUsd(request.saved_cost_usd)} (${request.saved_cost_pico_usd} pico-USD)` : null,
    ],
    ['User agent', 'request-detail-user-agent', request.user_agent],
  ];
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
