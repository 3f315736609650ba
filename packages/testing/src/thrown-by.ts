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
