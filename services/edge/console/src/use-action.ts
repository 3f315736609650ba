/** What a form or a button runs: busy while it runs, its failure kept to show. */
import { useState } from 'preact/hooks';

/**
 * An action's state; `run` clears the last failure, runs the action and keeps its failure, as
 * `failure` makes it; `submit` makes a form's submit handler that runs the action instead of
 * letting the browser send the form.
 */
export function useAction<Failure>(failure: (error: unknown) => Failure) {
  const [error, setError] = useState<Failure | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<void>): Promise<void> => {
    setError(undefined);
    setBusy(true);
    try {
      await action();
    } catch (caught) {
      setError(failure(caught));
    } finally {
      setBusy(false);
    }
  };
  const submit = (action: () => Promise<void>) => (event: Event) => {
    event.preventDefault();
    return run(action);
  };
  return { error, busy, run, submit, clearError: () => setError(undefined) };
}
