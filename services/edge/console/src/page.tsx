/**
 * The parts every page of the console shares: its section (with the state the end-to-end tests
 * wait on) and heading, the refresh button, the row of an empty table, and a form's failure and
 * submit button.
 */
import type { ComponentChildren } from 'preact';
import type { ApiError } from './admin-api';
import { ErrorBanner } from './error-banner';
import type { Loaded } from './use-loader';

/** A page: `page-<name>` with its load's state, a heading with `tools` (filters, refresh), then `children`. */
export function Page({
  name,
  title,
  loaded,
  tools,
  children,
}: {
  name: string;
  title: string;
  loaded: Loaded<unknown>;
  tools?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <section data-testid={`page-${name}`} data-state={loaded.loading ? 'loading' : loaded.error ? 'error' : 'ready'}>
      <div class="page-head">
        <h1>{title}</h1>
        {tools}
      </div>
      {children}
    </section>
  );
}

/** Loads a page's data again. */
export function RefreshButton({ loaded, testId }: { loaded: Loaded<unknown>; testId: string }) {
  return (
    <button type="button" class="secondary" onClick={loaded.reload} data-testid={testId}>
      Refresh
    </button>
  );
}

/**
 * What only the role admin may use (a create form): `children` for an admin, otherwise a hint,
 * `<name>-read-only`, that the role may only read and that `changes` (what the admin does) need the admin.
 */
export function AdminOnly({ canChange, name, changes, children }: { canChange: boolean; name: string; changes: string; children: ComponentChildren }) {
  if (canChange) return <>{children}</>;
  return (
    <p class="hint" data-testid={`${name}-read-only`}>
      Your role may only read: {changes} needs the role admin.
    </p>
  );
}

/** The one row of a table whose load found nothing. */
export function EmptyRow({ shown, columns, children }: { shown: boolean; columns: number; children: ComponentChildren }) {
  if (!shown) return null;
  return (
    <tr>
      <td colSpan={columns} class="muted">
        {children}
      </td>
    </tr>
  );
}

/** A form's failure, then its submit button, which says `busyLabel` while the form is sent. */
export function SubmitRow({
  error,
  errorTestId,
  busy,
  label,
  busyLabel,
  testId,
}: {
  error: ApiError | string | undefined;
  errorTestId: string;
  busy: boolean;
  label: string;
  busyLabel: string;
  testId: string;
}) {
  return (
    <>
      <ErrorBanner error={error} testId={errorTestId} />
      <button type="submit" disabled={busy} data-testid={testId}>
        {busy ? busyLabel : label}
      </button>
    </>
  );
}

/** A column's heading: its text, or `{ number: text }` for a right-aligned column of numbers. */
export type Column = string | { number: string };

/** A table in its scrolling wrapper: an optional caption, one heading row of `columns`, `children` as its body, then an optional `footer`. */
export function Table({
  testId,
  caption,
  columns,
  footer,
  children,
}: {
  testId: string;
  caption?: ComponentChildren;
  columns: readonly Column[];
  footer?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table data-testid={testId}>
        {caption !== undefined && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th key={column}>{column}</th>
              ) : (
                <th key={column.number} class="number">
                  {column.number}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
        {footer !== undefined && <tfoot>{footer}</tfoot>}
      </table>
    </div>
  );
}
