/**
 * The error `action` throws, checked to be a `type`: a test then asserts its message, code or
 * reason. Throws, failing the test, when nothing is thrown or something else is.
 */
export function thrownBy<E>(type: abstract new (...args: never[]) => E, action: () => unknown): E {
  try {
    action();
  } catch (error) {
    if (error instanceof type) return error;
    throw new Error(`expected a ${type.name}, but this was thrown: ${String(error)}`, { cause: error });
  }
  throw new Error(`expected a ${type.name}, but nothing was thrown`);
}

/** The error `promise` rejects with, checked to be a `type` (see thrownBy); fails the test when it resolves or rejects with something else. */
export async function rejectedWith<E>(type: abstract new (...args: never[]) => E, promise: Promise<unknown>): Promise<E> {
  const outcome = await promise.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a ${type.name}, but it resolved with ${String(outcome.value)}`);
  if (outcome.error instanceof type) return outcome.error;
  throw new Error(`expected a ${type.name}, but it rejected with: ${String(outcome.error)}`, { cause: outcome.error });
}
