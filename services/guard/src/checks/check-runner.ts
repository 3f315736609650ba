/**
 * One Check call: the texts of one point against the named policies. Every check of those
 * policies that runs at the point scans the original texts at the same time (an outside service's
 * wait overlaps the others'), each within its deadline; then, in the order of the policies and
 * their checks, each finding becomes a decision, an enforced block blocks, and enforced masks are
 * merged and replaced by placeholders. A check that fails or runs past its deadline becomes a
 * decision with its error, and its policy's on_error decides (allow: a flag; block: a block).
 *
 * On a stream window that more text follows (`final` false), each text's tail that could start a
 * finding is held back: the longest of every scanner's pending tail and the default (the trailing
 * run of characters tokens and numbers are made of), widened to never cut a finding in two, at most
 * two windows long. What is held is neither sent, nor decided on: the next window scans it again.
 */
import { GatewayError } from '@gateway/grpc';
import type { CheckRequestOutput, CheckResponse, GuardDecision, Placeholder, TextResult } from '@gateway/proto';
import type { GuardMetrics } from '../guard-metrics.js';
import { ACTIONS, POINTS, type PointName, type StoredCheck, type StoredPolicy, shortName } from '../policies/policy.js';
import { ExternalCheckError } from './external/index.js';
import type { Finding, Scanner } from './scanner.js';
import { type MaskSpan, maskText, PlaceholderBook } from './text-masks.js';

/** A check ready to run. */
export interface CompiledCheck {
  check: StoredCheck;
  scanner: Scanner;
  /** Its own deadline in ms. */
  deadlineMs: number;
}

/** A policy ready to apply. */
export interface CompiledPolicy {
  policy: StoredPolicy;
  checks: readonly CompiledCheck[];
  /** Its stream window in characters (tokens × 4, the guard's default filled in). */
  windowChars: number;
}

/** What a Check call runs with. */
export interface CheckRunOptions {
  /** The enabled policies by name. */
  policies: ReadonlyMap<string, CompiledPolicy>;
  /** Aborted when the caller cancels. */
  signal: AbortSignal;
  /** GUARD_MAX_TEXT_CHARS. */
  maxChars: number;
  metrics: GuardMetrics;
}

/** Characters a token, a key or a number is made of: what the default held tail runs over. */
const TOKEN_CHARACTER = /[\p{L}\p{N}_\-+/=.~:@%]/u;
const NUMBER_CHARACTER = /[0-9 \-().+]/;
const DEFAULT_TAIL_LIMIT = 256;

/** The default held tail: the trailing run of token characters, or of a number with its separators. */
export function defaultTail(text: string): number {
  let start = text.length;
  while (start > 0 && text.length - start < DEFAULT_TAIL_LIMIT && TOKEN_CHARACTER.test(text[start - 1]!)) start--;
  let number = text.length;
  while (number > 0 && text.length - number < DEFAULT_TAIL_LIMIT && NUMBER_CHARACTER.test(text[number - 1]!)) number--;
  // A number's run starts at its first digit, sign or parenthesis, not at the space before it.
  while (number < text.length && /[ -]/.test(text[number]!)) number++;
  const numberRun = text.slice(number);
  return Math.max(text.length - start, /[0-9]/.test(numberRun) ? numberRun.length : 0);
}

/** Why a check could not run, as decisions name it. */
function errorReason(error: unknown): string {
  if (error instanceof ExternalCheckError) return error.reason;
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return 'deadline_exceeded';
  return 'internal';
}

/** What a check past its deadline is stopped with. */
function deadlineError(): DOMException {
  return new DOMException('The check ran past its deadline.', 'TimeoutError');
}

/**
 * A scan within the check's deadline and the caller's signal. One controller and one timer a
 * check, cleared when it ends (AbortSignal.any and AbortSignal.timeout cost more per call than
 * the built-in scans themselves, and their timers outlive the check); a scanner that answers at
 * once is not raced at all.
 */
async function scanned(
  compiled: CompiledCheck,
  texts: readonly string[],
  context: Omit<Parameters<Scanner['scan']>[1], 'signal'>,
  callSignal: AbortSignal,
  metrics: GuardMetrics,
) {
  const stop = metrics.checkDuration.startTimer({ kind: compiled.check.kind });
  if (callSignal.aborted) throw callSignal.reason instanceof Error ? callSignal.reason : deadlineError();
  const controller = new AbortController();
  const { signal } = controller;
  const cancel = () => controller.abort(callSignal.reason);
  callSignal.addEventListener('abort', cancel, { once: true });
  const timer = setTimeout(() => controller.abort(deadlineError()), compiled.deadlineMs);
  try {
    const scan = compiled.scanner.scan(texts, { ...context, signal });
    if (!(scan instanceof Promise)) return scan;
    // A scanner that does not heed the signal still ends at the deadline for the caller.
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(signal.reason instanceof Error ? signal.reason : deadlineError());
      if (signal.aborted) fail();
      else signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => undefined);
    return await Promise.race([scan, aborted]);
  } finally {
    clearTimeout(timer);
    callSignal.removeEventListener('abort', cancel);
    stop();
  }
}

/** Where each text's release ends: its length when final, else before its held tail. */
function releaseEnds(
  texts: readonly string[],
  final: boolean,
  runs: ReadonlyArray<{ compiled: CompiledCheck; findings?: Finding[][] }>,
  windowChars: number,
): number[] {
  const limit = windowChars * 2;
  return texts.map((text, index) => {
    if (final) return text.length;
    let held = defaultTail(text);
    for (const { compiled } of runs) held = Math.max(held, compiled.scanner.pendingTail?.(text) ?? 0);
    let end = text.length - Math.min(held, limit, text.length);
    const spans = runs.flatMap((run) => run.findings?.[index] ?? []).filter((finding) => finding.start >= 0);
    // A finding reaching into the tail is held whole, and so is one reaching into that ...
    const widen = (to: (finding: Finding) => number) => {
      for (let moved = true; moved; ) {
        moved = false;
        for (const finding of spans)
          if (finding.start < end && finding.end > end) {
            end = to(finding);
            moved = true;
          }
      }
    };
    widen((finding) => finding.start);
    // ... up to two windows: past them, a finding the limit cuts is decided on now, whole.
    if (text.length - end > limit) {
      end = text.length - limit;
      widen((finding) => finding.end);
    }
    return end;
  });
}

/** One check of one policy run on the texts: its findings by text, or why it could not run. */
type CheckResult = { policy: StoredPolicy; compiled: CompiledCheck; findings: Finding[][] | undefined; error: string | undefined };

/** A Check call's answer, every list present. */
export type CheckOutcome = CheckResponse & { blocked: boolean; texts: TextResult[]; decisions: GuardDecision[]; placeholders: Placeholder[] };

/** Runs one Check call. */
export async function runCheck(request: CheckRequestOutput, options: CheckRunOptions): Promise<CheckOutcome> {
  const point = shortName(POINTS, request.point);
  if (!point) {
    options.metrics.calls.inc({ point: 'unspecified', outcome: 'refused' });
    throw GatewayError.of('invalid_request', 'point must be input, output, tool_arguments or tool_result.', { param: 'point' });
  }
  const texts = request.texts.map((text) => text.text ?? '');
  const paths = request.texts.map((text) => text.path ?? '');
  const total = texts.reduce((sum, text) => sum + text.length, 0);
  if (total > options.maxChars) {
    options.metrics.calls.inc({ point, outcome: 'refused' });
    throw GatewayError.of('invalid_request', `The texts of one check have at most ${options.maxChars} characters (GUARD_MAX_TEXT_CHARS).`, { param: 'texts' });
  }
  const final = request.final === true;
  const named = [...new Set(request.policies)].map((name) => options.policies.get(name)).filter((policy) => policy !== undefined);
  const context = { requestId: request.request_id ?? '', keyId: request.key_id ?? '', teamId: request.team_id ?? '', model: request.model ?? '', point };
  const runs = named.flatMap((compiled) =>
    compiled.checks.filter((check) => check.check.points.includes(point as PointName)).map((check) => ({ policy: compiled.policy, compiled: check })),
  );
  const settled = await Promise.allSettled(runs.map((run) => scanned(run.compiled, texts, context, options.signal, options.metrics)));
  const results = runs.map((run, index): CheckResult => {
    const outcome = settled[index]!;
    return outcome.status === 'fulfilled'
      ? { ...run, findings: outcome.value, error: undefined }
      : { ...run, findings: undefined, error: errorReason(outcome.reason) };
  });
  const windowChars = Math.min(...named.map((policy) => policy.windowChars), Number.MAX_SAFE_INTEGER);
  const ends = releaseEnds(texts, final, results, windowChars === Number.MAX_SAFE_INTEGER ? DEFAULT_TAIL_LIMIT : windowChars);

  const response: CheckOutcome = { blocked: false, texts: [], decisions: [], placeholders: [] };
  const { decisions, masks } = decide(response, results, { point: request.point, paths, ends, metrics: options.metrics });
  const book = new PlaceholderBook();
  response.texts = texts.map((text, index) => ({ text: maskText(text, masks[index]!, ends[index]!, book), held_chars: text.length - ends[index]! }));
  response.placeholders = book.restored;
  response.decisions = decisions
    .sort((a, b) => a.text - b.text || (a.decision.start ?? 0) - (b.decision.start ?? 0) || a.order - b.order)
    .map(({ decision }) => decision);
  options.metrics.calls.inc({ point, outcome: response.blocked ? 'blocked' : 'passed' });
  return response;
}

/** What each check found, as decisions in order of where; what it blocked, on the response; what to mask, by text. */
function decide(
  response: CheckOutcome,
  results: CheckResult[],
  scope: { point: CheckRequestOutput['point']; paths: string[]; ends: number[]; metrics: CheckRunOptions['metrics'] },
): { decisions: Array<{ decision: GuardDecision; text: number; order: number }>; masks: MaskSpan[][] } {
  const { point, paths, ends, metrics } = scope;
  const decisions: Array<{ decision: GuardDecision; text: number; order: number }> = [];
  const masks: MaskSpan[][] = ends.map(() => []);
  const block = (policy: StoredPolicy, check: StoredCheck) => {
    if (response.blocked) return;
    response.blocked = true;
    response.blocked_by_policy = policy.name;
    response.blocked_by_check = check.name;
  };
  for (const [order, result] of results.entries()) {
    const { policy, compiled } = result;
    const check = compiled.check;
    const enforced = policy.mode === 'enforce';
    const labels = { policy: policy.name, check: check.name };
    if (result.error) {
      const decision = errorDecision(result, result.error, point);
      metrics.checkErrors.inc({ ...labels, reason: result.error });
      metrics.checks.inc({ ...labels, action: policy.on_error === 'block' ? 'block' : 'flag' });
      if (decision.action === ACTIONS.block && enforced) block(policy, check);
      decisions.push({ decision, text: -1, order });
      continue;
    }
    let found = false;
    for (const [index, findings] of (result.findings ?? []).entries()) {
      for (const finding of findings) {
        // Held back: decided on with the next window.
        if (finding.start >= 0 && finding.end > ends[index]!) continue;
        found = true;
        decisions.push({
          decision: {
            policy: policy.name,
            check: check.name,
            point,
            action: ACTIONS[check.action],
            enforced,
            entity: finding.entity,
            path: paths[index] ?? '',
            start: finding.start,
            end: finding.end,
          },
          text: index,
          order,
        });
        if (!enforced) continue;
        if (check.action === 'block') block(policy, check);
        if (check.action === 'mask') {
          const whole = finding.start < 0;
          masks[index]!.push({
            start: whole ? 0 : finding.start,
            end: whole ? ends[index]! : finding.end,
            entity: finding.entity,
            restore: policy.restore_masked,
          });
        }
      }
    }
    metrics.checks.inc({ ...labels, action: found ? check.action : 'pass' });
  }

  return { decisions, masks };
}

/** The decision of a check that could not run: the policy's on_error (block, else flag), with why. */
function errorDecision(result: CheckResult, error: string, point: CheckRequestOutput['point']): GuardDecision {
  const action = result.policy.on_error === 'block' ? 'block' : 'flag';
  return {
    policy: result.policy.name,
    check: result.compiled.check.name,
    point,
    action: ACTIONS[action],
    enforced: result.policy.mode === 'enforce',
    entity: '',
    path: '',
    start: -1,
    end: -1,
    error,
  };
}
