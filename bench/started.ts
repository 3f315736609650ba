/** What a suite starts and must stop whatever happens: a cluster, the processes around it. */
export interface Started {
  stop(): Promise<void>;
}

/** Runs `use` on what `start` resolves to, then stops that, whether `use` finished or threw. */
export async function onStarted<Value extends Started>(start: Promise<Value>, use: (started: Value) => Promise<void>): Promise<void> {
  const started = await start;
  try {
    await use(started);
  } finally {
    await started.stop();
  }
}
