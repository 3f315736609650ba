/**
 * Models: every catalog model with its health as the gateway sees it: available or not, and when
 * an unavailable one is tried again.
 */
import type { AdminApi } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { formatMilliseconds } from '../format';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { useLoader } from '../use-loader';

/** The Models page. */
export function ModelsPage({ api }: { api: AdminApi }) {
  const models = useLoader(() => api.models.list(), [api]);
  const list = models.data ?? [];
  return (
    <Page name="models" title="Models" loaded={models} tools={<RefreshButton loaded={models} testId="models-refresh" />}>
      <ErrorBanner error={models.error} />
      <Table testId="models-table" columns={['Id', 'Provider', 'Available', 'Retry after', 'Quality tier']}>
        {list.map((model) => (
          <tr key={model.id} data-testid="model-row" data-model-id={model.id}>
            <td>
              <code>{model.id}</code>
            </td>
            <td>{model.provider}</td>
            <td data-testid="model-available">{model.available ? <span class="badge good">yes</span> : <span class="badge bad">no</span>}</td>
            <td>{model.retry_after_ms === null ? <span class="muted">—</span> : `in ${formatMilliseconds(model.retry_after_ms)}`}</td>
            <td>{model.quality_tier ?? <span class="muted">—</span>}</td>
          </tr>
        ))}
        <EmptyRow shown={models.data !== undefined && list.length === 0} columns={5}>
          The catalog has no models.
        </EmptyRow>
      </Table>
    </Page>
  );
}
