/**
 * A table row an admin may change: the item's id, its cells, then its buttons (Edit, and a removal
 * such as Revoke or Delete); the edit form or the removal's confirmation opens in a row below it.
 */
import { type ComponentChildren, toChildArray } from 'preact';
import { useState } from 'preact/hooks';
import { ConfirmDialog } from './confirm-dialog';
import { useAction } from './use-action';
import { asApiError } from './use-loader';

/** How a removal is offered: its button's test id (which also prefixes the confirmation's), its label and its confirm button's. */
export interface RemovalButtons {
  testId: string;
  label: string;
  confirmLabel: string;
}

/** A removal that asks first: its buttons, and what its confirmation says. */
export interface Removal extends RemovalButtons {
  /** What will happen, as the confirmation asks it. */
  question: ComponentChildren;
}

/** The collection of the admin API an item is removed from, by its id. */
export interface Removable {
  remove(id: string): Promise<unknown>;
}

/** An edit form below the row; `form` gets what to call when it is saved or cancelled. */
export interface Edit {
  testId: string;
  form: (onDone: (changed: boolean) => void) => ComponentChildren;
}

/** The row's own attributes: its test id and the data attributes a test finds it by. */
export type RowAttributes = { class?: string } & Record<`data-${string}`, string>;

/**
 * The row of the item `id` of `collection`: its id (in code), then `children`, its other cells; the
 * buttons, in a last cell, show only while `canChange` and nothing is open. `onChanged` is called
 * once an edit is saved or the removal (of the item from its collection) is done.
 */
export function ManagedRow({
  row,
  id,
  collection,
  canChange,
  edit,
  removal,
  onChanged,
  children,
}: {
  row: RowAttributes;
  id: string;
  collection: Removable;
  canChange: boolean;
  edit?: Edit;
  removal: Removal;
  onChanged: () => void;
  children: ComponentChildren;
}) {
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm'>('view');
  const { error, busy, run, clearError } = useAction(asApiError);
  const close = () => {
    setMode('view');
    clearError();
  };
  return (
    <>
      <tr {...row}>
        <td>
          <code>{id}</code>
        </td>
        {children}
        <td>
          {canChange && mode === 'view' && (
            <div class="actions">
              {edit && (
                <button type="button" class="secondary" onClick={() => setMode('edit')} data-testid={edit.testId}>
                  Edit
                </button>
              )}
              <button type="button" class="danger" onClick={() => setMode('confirm')} data-testid={removal.testId}>
                {removal.label}
              </button>
            </div>
          )}
        </td>
      </tr>
      {mode !== 'view' && (
        <tr class="detail">
          <td colSpan={toChildArray(children).length + 2}>
            {mode === 'edit' &&
              edit?.form((changed) => {
                close();
                if (changed) onChanged();
              })}
            {mode === 'confirm' && (
              <ConfirmDialog
                testId={removal.testId}
                error={error}
                busy={busy}
                confirmLabel={removal.confirmLabel}
                onConfirm={() =>
                  run(async () => {
                    await collection.remove(id);
                    close();
                    onChanged();
                  })
                }
                onCancel={close}
              >
                {removal.question}
              </ConfirmDialog>
            )}
          </td>
        </tr>
      )}
    </>
  );
}
