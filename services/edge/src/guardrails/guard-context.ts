/**
 * What a completion carries of the guard (proto/gateway/guard/v1/guard.proto) once a policy's
 * output checks apply to it: the policies, one way to check a text with their deadline and
 * on_error applied, and the decisions made so far. The whole answer's check (output-guard.ts) and
 * the stream hold-back (stream-hold-back.ts) both read it; a request no output policy applies to
 * has none (Completion.guard undefined) and pays nothing.
 */
import type { CheckResponseOutput, GuardDecisionOutput, StreamWindowOutput } from '@gateway/proto';

/** Where in a request's life a check runs (the guard's Point, by name). */
export type GuardPoint = 'POINT_INPUT' | 'POINT_OUTPUT' | 'POINT_TOOL_ARGUMENTS' | 'POINT_TOOL_RESULT';

/** One text to check, with its JSON path in the API's body (`choices[0].message.content`). */
export interface GuardText {
  readonly path: string;
  readonly text: string;
}

/** What the edge knows of one policy that applies to a request at a point (from its PolicySummary). */
export interface AppliedPolicy {
  readonly name: string;
  /** Its stream hold-back, defaults filled in by the guard. */
  readonly streamWindow: Required<Pick<StreamWindowOutput, 'tokens' | 'ms'>>;
  /** False for a monitor policy: its decisions are recorded and change nothing. */
  readonly enforced: boolean;
  /** What the edge does when its check cannot run. */
  readonly onError: 'allow' | 'block';
  /** Whether the input's masked spans are put back into the answer. */
  readonly restoreMasked: boolean;
  /** The longest deadline of its checks, in milliseconds. */
  readonly deadlineMs: number;
}

/** The guard of one request, for its output: whole or streamed. */
export interface RequestGuard {
  /** The policies whose output checks apply to this request, in snapshot order; never empty. */
  readonly policies: readonly AppliedPolicy[];
  /**
   * The hold-back of a stream: the smallest window (tokens and ms, each the least over policies),
   * so every policy sees text before it leaves.
   */
  readonly streamWindow: { readonly tokens: number; readonly ms: number };
  /**
   * Checks texts at a point against the policies applying there. Never rejects: a guard that is
   * unreachable or past its deadline (each policy's deadline plus the edge's margin) yields a
   * response built from each policy's on_error: blocked when one says block, the texts unchanged,
   * and a decision with `error` per policy. Every decision is appended to `decisions`.
   * `final` false: a stream window more text may follow (the guard may hold back a tail, TextResult.held_chars).
   */
  check(point: GuardPoint, texts: readonly GuardText[], final: boolean): Promise<CheckResponseOutput>;
  /**
   * An answer's text with the placeholders the input's check made (`<CARD_1>`) replaced by their
   * originals, for policies with restore_masked; the text itself when there are none. The
   * originals live in this object only, for the request.
   */
  restore(text: string): string;
  /** Every decision made for the request so far (input, output), in order: the answer's `gateway.guardrails` and its usage event. */
  readonly decisions: GuardDecisionOutput[];
}
