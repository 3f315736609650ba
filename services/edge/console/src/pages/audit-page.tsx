/**
 * Audit: every admin change auth recorded, newest first: when, who (subject, role, via), what
 * (action, target) and the fields it changed, with the public facts before and after. Filters by
 * target id and actor; "Load more" follows the trail's cursor. Viewers may read it.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, AuditEntry } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { TextField } from '../fields';
import { formatUnixMilliseconds } from '../format';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { useAction } from '../use-action';
import { asApiError, useLoader } from '../use-loader';

/** The filters: [field, label, test id, placeholder]. */
const FILTERS: ReadonlyArray<['targetId' | 'actor', string, string, string]> = [
  ['targetId', 'Target id', 'audit-target', 'key_… or adt_…'],
  ['actor', 'Actor', 'audit-actor-filter', 'static-token, adt_…'],
];

/** The top-level fields whose values differ between before and after, as `field: before → after`. */
export function changedFields(before: unknown, after: unknown): string[] {
  if (!before || !after || typeof before !== 'object' || typeof after !== 'object') return [];
  const left = before as Record<string, unknown>;
  const right = after as Record<string, unknown>;
  const text = (value: unknown) => (value === undefined ? '—' : JSON.stringify(value));
  return [...new Set([...Object.keys(left), ...Object.keys(right)])]
    .filter((field) => text(left[field]) !== text(right[field]))
    .map((field) => `${field}: ${text(left[field])} → ${text(right[field])}`);
}

function EntryRow({ entry }: { entry: AuditEntry }) {
  const changes = changedFields(entry.before, entry.after);
  return (
    <tr data-testid="audit-row" data-action={entry.action} data-target-id={entry.target_id}>
      <td>{formatUnixMilliseconds(entry.created_at_ms)}</td>
      <td data-testid="audit-actor">
        <code>{entry.actor.subject}</code>{' '}
        <span class="muted">
          ({entry.actor.role}, {entry.actor.via})
        </span>
      </td>
      <td data-testid="audit-action">{entry.action}</td>
      <td>
        <code>{entry.target_id}</code>
      </td>
      <td data-testid="audit-changes">
        {entry.before === null ? <span class="muted">created</span> : changes.length ? changes.join('; ') : <span class="muted">no change</span>}
        <details>
          <summary>before / after</summary>
          <pre>{JSON.stringify({ before: entry.before, after: entry.after }, null, 2)}</pre>
        </details>
      </td>
    </tr>
  );
}

/** The Audit page. */
export function AuditPage({ api }: { api: AdminApi }) {
  const [filters, setFilters] = useState({ targetId: '', actor: '' });
  const [typed, setTyped] = useState(filters);
  const first = useLoader(() => api.audit(filters), [api, filters]);
  const [more, setMore] = useState<{ entries: AuditEntry[]; cursor: string | null; of: unknown }>({ entries: [], cursor: null, of: undefined });
  const { error, busy, run } = useAction(asApiError);
  // Pages loaded with "Load more" belong to the first page they followed.
  const extra = more.of === first.data ? more : { entries: [], cursor: first.data?.next_cursor ?? null };
  const entries = [...(first.data?.data ?? []), ...extra.entries];
  return (
    <Page name="audit" title="Audit" loaded={first} tools={<RefreshButton loaded={first} testId="audit-refresh" />}>
      <form
        class="card"
        data-testid="audit-filters"
        onSubmit={(event) => {
          event.preventDefault();
          setFilters({ targetId: typed.targetId.trim(), actor: typed.actor.trim() });
        }}
      >
        <div class="fields">
          {FILTERS.map(([field, label, testId, placeholder]) => (
            <TextField
              key={field}
              label={label}
              value={typed[field]}
              testId={testId}
              placeholder={placeholder}
              onInput={(value) => setTyped({ ...typed, [field]: value })}
            />
          ))}
        </div>
        <button type="submit" data-testid="audit-apply">
          Filter
        </button>
      </form>
      <ErrorBanner error={first.error ?? error} />
      <Table testId="audit-table" columns={['When (UTC)', 'Who', 'Action', 'Target', 'Changes']}>
        {entries.map((entry) => (
          <EntryRow key={entry.id} entry={entry} />
        ))}
        <EmptyRow shown={first.data !== undefined && entries.length === 0} columns={5}>
          No admin change recorded.
        </EmptyRow>
      </Table>
      {extra.cursor && (
        <button
          type="button"
          class="secondary"
          disabled={busy}
          data-testid="audit-more"
          onClick={() =>
            run(async () => {
              const page = await api.audit({ ...filters, cursor: extra.cursor ?? undefined });
              setMore({ entries: [...extra.entries, ...page.data], cursor: page.next_cursor, of: first.data });
            })
          }
        >
          {busy ? 'Loading…' : 'Load more'}
        </button>
      )}
    </Page>
  );
}
