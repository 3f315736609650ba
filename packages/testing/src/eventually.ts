/** Resolves with the first value the check gives that is neither undefined nor false, polling; rejects after timeoutMs with the description. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  description: string,
  timeoutMs = 5000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
