/**
 * The one pricing function. The edge (for `gateway.cost_usd`) and metering (for the bill) both
 * call it, with the same integer prices, so that the response and the metered total agree to the
 * last digit.
 *
 * Prices are integers of micro-USD per million tokens, which makes one token cost an integer of
 * pico-USD: cost = tokens x price, exact in bigint, with no rounding anywhere.
 */

/** Prices of one model; field names match gateway.router.v1.Pricing. */
export interface Pricing {
  input_micro_usd_per_mtok: number;
  cached_input_micro_usd_per_mtok: number;
  output_micro_usd_per_mtok: number;
}

/** The token counts that are billed; field names match gateway.chat.v1.Usage. */
export interface BilledUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  /** Part of prompt_tokens that the provider served from its cache. */
  cached_tokens?: number;
}

/** The exact cost of a usage in pico-USD (1e-12 USD). */
export function costPicoUsd(pricing: Pricing, usage: BilledUsage): bigint {
  const prompt = BigInt(usage.prompt_tokens ?? 0);
  const cached = BigInt(Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens ?? 0));
  const completion = BigInt(usage.completion_tokens ?? 0);
  return (
    (prompt - cached) * BigInt(pricing.input_micro_usd_per_mtok ?? 0) +
    cached * BigInt(pricing.cached_input_micro_usd_per_mtok ?? 0) +
    completion * BigInt(pricing.output_micro_usd_per_mtok ?? 0)
  );
}

const PICO_PER_USD = 1_000_000_000_000n;

/**
 * Converts pico-USD to a USD number for JSON. The decimal text of the result is exact: the whole
 * and fractional parts are formatted as integers and parsed once.
 */
export function picoUsdToUsd(picoUsd: bigint): number {
  const negative = picoUsd < 0n;
  const magnitude = negative ? -picoUsd : picoUsd;
  const whole = magnitude / PICO_PER_USD;
  const fraction = (magnitude % PICO_PER_USD).toString().padStart(12, '0');
  return Number(`${negative ? '-' : ''}${whole}.${fraction}`);
}

/** Parses a price in USD per million tokens ("2.50", 0.15) into integer micro-USD per million tokens. */
export function usdPerMtokToMicro(value: string | number): number {
  const text = typeof value === 'number' ? value.toString() : value.trim();
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text);
  if (!match) throw new RangeError(`"${text}" is not a price in USD with at most 6 decimals`);
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(6, '0'));
}
