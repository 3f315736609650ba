/**
 * The two kinds of form that change something through the admin API: a card that creates (or
 * declares) one thing, and the edit form that opens below a table row. Each runs its submission
 * as one action: busy while it runs, its failure shown above its buttons.
 */
import type { ComponentChildren } from 'preact';
import type { ApiError } from './admin-api';
import { ErrorBanner } from './error-banner';
import { FieldError } from './key-fields';
import { SubmitRow } from './page';
import { useAction } from './use-action';
import { asApiError } from './use-loader';

/** What a form shows of a failure. */
type Failure = (error: unknown) => ApiError | string;

/** A failure of a form with typed fields: a field typed wrongly (its message), or what the admin API answered. */
export function fieldFailure(error: unknown): ApiError | string {
  return error instanceof FieldError ? error.message : asApiError(error);
}

/**
 * A card with `title`, `children` (its fields and hints) and a submit button saying `label`
 * (`busyLabel` while sent); `testId` prefixes its test ids (`-form`, `-error`, `-submit`).
 */
export function CreateForm({
  testId,
  title,
  label,
  busyLabel = 'Creating…',
  failure = asApiError,
  onSubmit,
  children,
}: {
  testId: string;
  title: string;
  label: string;
  busyLabel?: string;
  failure?: Failure;
  onSubmit: () => Promise<void>;
  children: ComponentChildren;
}) {
  const { error, busy, submit } = useAction(failure);
  return (
    <form class="card" data-testid={`${testId}-form`} onSubmit={submit(onSubmit)}>
      <h2>{title}</h2>
      {children}
      <SubmitRow error={error} errorTestId={`${testId}-error`} busy={busy} label={label} busyLabel={busyLabel} testId={`${testId}-submit`} />
    </form>
  );
}

/**
 * An edit form below a row: `children` (its fields and hints), then its failure, Save (`Saving…`
 * while sent) and Cancel; `testId` prefixes its test ids (`-form`, `-error`, `-save`, `-cancel`).
 */
export function EditForm({
  testId,
  failure = asApiError,
  onSubmit,
  onCancel,
  children,
}: {
  testId: string;
  failure?: Failure;
  onSubmit: () => Promise<void>;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const { error, busy, submit } = useAction(failure);
  return (
    <form class="edit" data-testid={`${testId}-form`} onSubmit={submit(onSubmit)}>
      {children}
      <ErrorBanner error={error} testId={`${testId}-error`} />
      <div class="actions">
        <button type="submit" disabled={busy} data-testid={`${testId}-save`}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" class="secondary" onClick={onCancel} data-testid={`${testId}-cancel`}>
          Cancel
        </button>
      </div>
    </form>
  );
}
