/** The one way a page asks before a change that cannot be undone (revoke, delete). */
import type { ComponentChildren } from 'preact';
import type { ApiError } from './admin-api';
import { ErrorBanner } from './error-banner';

/** What a confirmation shows and does; `testId` prefixes its parts' test ids (`-dialog`, `-error`, `-confirm`, `-cancel`). */
export interface ConfirmDialogProps {
  testId: string;
  /** What will happen. */
  children: ComponentChildren;
  /** The failure of the last try, shown above the buttons. */
  error: ApiError | string | undefined;
  /** While the change is on its way: the confirm button is disabled. */
  busy: boolean;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}

/** A confirmation in place of a row's actions: what will happen, the last failure, confirm and cancel. */
export function ConfirmDialog({ testId, children, error, busy, confirmLabel, onConfirm, onCancel }: ConfirmDialogProps) {
  return (
    <div class="confirm" role="alertdialog" data-testid={`${testId}-dialog`}>
      <p>{children}</p>
      <ErrorBanner error={error} testId={`${testId}-error`} />
      <div class="actions">
        <button type="button" class="danger" disabled={busy} data-testid={`${testId}-confirm`} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" class="secondary" onClick={onCancel} data-testid={`${testId}-cancel`}>
          Cancel
        </button>
      </div>
    </div>
  );
}
