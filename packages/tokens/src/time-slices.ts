/**
 * Runs a piece of tokenizer work either at once or in time slices. The work is written once, as a
 * generator that yields after each bounded step (a segment, see text-segments.ts) the UTF-8 bytes
 * it has just read, the measure of the tokenizer's work; runToEnd and runInTimeSlices drive the
 * same generator, so a sliced result always equals the synchronous one.
 */
import { setImmediate as nextLoopTurn } from 'node:timers/promises';

/** A unit of work: yields the bytes each step read, returns its result. */
export type Steps<Result> = Generator<number, Result, undefined>;

/** A slice ends, and the event loop gets a turn, once this many milliseconds have passed. */
export const SLICE_MILLISECONDS = 5;

/**
 * Work that has read fewer UTF-8 bytes than this never pauses: a request's prompt is counted on
 * the hot path of every request, and a pause costs a loop turn. 8 KB take about 0.25 ms of
 * English, 6 to 10 ms at worst (CJK or Thai text that misses the tokenizer's cache, 2 to 4 µs a
 * character); an English prompt of any size pauses only once it has run SLICE_MILLISECONDS.
 */
export const SMALL_INPUT_BYTES = 8_192;

/** Runs the steps to the end, synchronously. */
export function runToEnd<Result>(steps: Steps<Result>): Result {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Runs the steps, giving the event loop a turn (setImmediate, so pending I/O runs first) whenever
 * SLICE_MILLISECONDS have passed since the start or the last turn. No pause before
 * SMALL_INPUT_BYTES have been read.
 */
export async function runInTimeSlices<Result>(steps: Steps<Result>): Promise<Result> {
  let read = 0;
  let sliceStart = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    read += step.value;
    if (read >= SMALL_INPUT_BYTES && performance.now() - sliceStart >= SLICE_MILLISECONDS) {
      await nextLoopTurn();
      sliceStart = performance.now();
    }
  }
}
