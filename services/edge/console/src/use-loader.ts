/**
 * Loads data for a page and reloads it on demand. A result that arrives after a newer load
 * started (the user changed the range twice quickly) is dropped, so the page never shows the
 * older answer last.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './admin-api';

/** A load's state; `data` stays the last success while a reload runs or fails. */
export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  /**
   * True from the render in which the inputs change (or `reload` is called) until their load
   * settles, so a page never reports "ready" with the previous inputs' data.
   */
  loading: boolean;
  /** Loads again with the same inputs. */
  reload: () => void;
}

/** Any failure as an ApiError, so the page shows one kind of message. */
export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(0, error instanceof Error ? error.message : String(error));
}

function sameInputs(left: readonly unknown[] | undefined, right: readonly unknown[]): boolean {
  return left !== undefined && left.length === right.length && left.every((value, index) => Object.is(value, right[index]));
}

/** Runs `load` now and whenever one of `inputs` changes or `reload` is called. */
export function useLoader<T>(load: () => Promise<T>, inputs: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | undefined; settled: readonly unknown[] | undefined }>({
    data: undefined,
    error: undefined,
    settled: undefined,
  });
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  const current = [...inputs, round];
  useEffect(() => {
    const generation = ++latest.current;
    const started = current;
    load().then(
      (data) => {
        if (generation === latest.current) setState({ data, error: undefined, settled: started });
      },
      (error: unknown) => {
        if (generation === latest.current) setState((previous) => ({ data: previous.data, error: asApiError(error), settled: started }));
      },
    );
    // `load` is a new closure on every render; `inputs` name what it depends on.
  }, current);
  useEffect(
    () => () => {
      latest.current = Number.NaN;
    },
    [],
  );
  const reload = useCallback(() => setRound((value) => value + 1), []);
  return { data: state.data, error: state.error, loading: !sameInputs(state.settled, current), reload };
}
