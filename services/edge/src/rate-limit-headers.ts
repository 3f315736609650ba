/**
 * The rate-limit headers OpenAI sends, built from auth's decision: on every successful response
 * (whole or streamed) and on every 429. A limit that is unlimited gets no headers at all, since
 * any number would be a lie.
 */
import type { CheckKeyResponseOutput, LimitStateOutput } from '@gateway/proto';

/**
 * A duration the way OpenAI writes x-ratelimit-reset-* (Go's time.Duration format): `250ms`
 * below a second, else hours, minutes and seconds with the seconds' fraction trimmed: `1s`,
 * `1.5s`, `6m0s`, `1h0m0s`. Zero is `0s`.
 */
export function formatResetDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const secondsMs = total % 60_000;
  const seconds = `${Math.floor(secondsMs / 1000)}${
    secondsMs % 1000
      ? `.${String(secondsMs % 1000)
          .padStart(3, '0')
          .replace(/0+$/, '')}`
      : ''
  }s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/** The three header names of each limit, built once (they are set on every answer). */
const LIMIT_HEADER_NAMES = {
  requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
  tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
} as const;

function addLimitHeaders(headers: Record<string, string>, kind: 'requests' | 'tokens', state: LimitStateOutput | undefined | null): void {
  if (!state || state.unlimited || !state.limit) return;
  const [limit, remaining, reset] = LIMIT_HEADER_NAMES[kind];
  headers[limit] = String(state.limit);
  headers[remaining] = String(Math.max(0, state.remaining ?? 0));
  headers[reset] = formatResetDuration(state.reset_ms ?? 0);
}

/**
 * The limit that binds first of a key's and its team's: the one with less remaining (a limited one
 * before none); the key's when neither is limited or both have as much left.
 */
export function bindingLimit(key: LimitStateOutput | undefined | null, team: LimitStateOutput | undefined | null): LimitStateOutput | undefined | null {
  const limited = (state: LimitStateOutput | undefined | null) => Boolean(state && !state.unlimited && state.limit);
  if (!limited(team)) return key;
  if (!limited(key)) return team;
  return (team!.remaining ?? 0) < (key!.remaining ?? 0) ? team : key;
}

/** The header that tells what a key with a budget may still spend, in USD. */
export const BUDGET_REMAINING_HEADER = 'x-gateway-budget-remaining-usd';

/** Pico-USD as an exact decimal USD string: 1234567 -> "0.000001234567", 2000000000000 -> "2". */
export function picoUsdString(pico: number | bigint): string {
  const value = BigInt(pico);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(13, '0');
  const whole = digits.slice(0, -12);
  const fraction = digits.slice(-12).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/**
 * The x-ratelimit-* headers of a decision (limit, remaining after this request, time until full):
 * of each kind, the key's or, for a key in a team, its team's when that binds first (less left), so
 * that a client pacing itself by them is never refused by the team's limit unawares; and for a key with a budget, or in a team with one, x-gateway-budget-remaining-usd:
 * what it may still spend, the smallest of what is left of its day's and its month's budget and of
 * its team's, as metered when the request started, less what the other requests in flight hold.
 */
export function rateLimitHeaders(
  decision: Pick<CheckKeyResponseOutput, 'requests' | 'tokens' | 'budget' | 'team_budget'> &
    Partial<Pick<CheckKeyResponseOutput, 'team_requests' | 'team_tokens'>>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  addLimitHeaders(headers, 'requests', bindingLimit(decision.requests, decision.team_requests));
  addLimitHeaders(headers, 'tokens', bindingLimit(decision.tokens, decision.team_tokens));
  const left = [decision.budget, decision.team_budget].filter((budget) => budget?.limited).map((budget) => Math.max(0, budget?.remaining_pico_usd ?? 0));
  if (left.length > 0) headers[BUDGET_REMAINING_HEADER] = picoUsdString(Math.min(...left));
  return headers;
}

/**
 * The headers telling a client when to retry: `retry-after` in whole seconds (at least 1, rounded
 * up, so a client that waits it is never early) and the exact `retry-after-ms`, which the
 * official SDKs prefer.
 */
export function retryAfterHeaders(retryAfterMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(retryAfterMs));
  return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))), 'retry-after-ms': String(ms) };
}

/**
 * The header of a 503 from a part that is down with no time of its own to name: retry in a second,
 * since a service restarting or redeploying usually answers again by then.
 */
export function retrySoonHeaders(): Record<string, string> {
  return { 'retry-after': '1' };
}
