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
  /** Plain prompt tokens: neither read from nor written to a cache. */
  input_micro_usd_per_mtok: number;
  /** Prompt tokens read from the provider's cache. */
  cached_input_micro_usd_per_mtok: number;
  output_micro_usd_per_mtok: number;
  /**
   * Prompt tokens written to the cache for five minutes; absent or 0: the input price (0 is what
   * a Pricing message from a router that predates the field reads as, so a free write is not
   * expressible).
   */
  cache_write_micro_usd_per_mtok?: number;
  /** Prompt tokens written to the cache for one hour; absent or 0: the five-minute write price. */
  cache_write_1h_micro_usd_per_mtok?: number;
}

/** The token counts that are billed; field names match gateway.chat.v1.Usage. */
export interface BilledUsage {
  /** Every input token: plain, cache reads and cache writes. */
  prompt_tokens?: number;
  completion_tokens?: number;
  /** Part of prompt_tokens that the provider served from its cache. */
  cached_tokens?: number;
  /** Part of prompt_tokens written to the cache: the five-minute and one-hour writes together. */
  cache_write_tokens?: number;
  /** Part of cache_write_tokens written for five minutes. */
  cache_write_5m_tokens?: number;
  /** Part of cache_write_tokens written for one hour. */
  cache_write_1h_tokens?: number;
}

/**
 * The exact cost of a usage in pico-USD (1e-12 USD): plain input, cache reads, five-minute and
 * one-hour cache writes and output, each at its price. Cache writes that a provider reports
 * without their lifetime (cache_write_tokens above the sum of the split) are five-minute writes,
 * the providers' default. Counts a provider reports past prompt_tokens are capped by it, reads
 * first, so that no token is billed twice.
 */
export function costPicoUsd(pricing: Pricing, usage: BilledUsage): bigint {
  const prompt = usage.prompt_tokens ?? 0;
  const cached = Math.min(usage.cached_tokens ?? 0, prompt);
  const written1h = Math.min(usage.cache_write_1h_tokens ?? 0, prompt - cached);
  const writtenTotal = Math.max(usage.cache_write_tokens ?? 0, (usage.cache_write_5m_tokens ?? 0) + (usage.cache_write_1h_tokens ?? 0));
  const written5m = Math.min(writtenTotal - (usage.cache_write_1h_tokens ?? 0), prompt - cached - written1h);
  const plain = prompt - cached - written1h - written5m;
  const inputPrice = pricing.input_micro_usd_per_mtok ?? 0;
  const write5mPrice = pricing.cache_write_micro_usd_per_mtok || inputPrice;
  const write1hPrice = pricing.cache_write_1h_micro_usd_per_mtok || write5mPrice;
  return (
    BigInt(plain) * BigInt(inputPrice) +
    BigInt(cached) * BigInt(pricing.cached_input_micro_usd_per_mtok ?? 0) +
    BigInt(written5m) * BigInt(write5mPrice) +
    BigInt(written1h) * BigInt(write1hPrice) +
    BigInt(usage.completion_tokens ?? 0) * BigInt(pricing.output_micro_usd_per_mtok ?? 0)
  );
}

/**
 * The most a request can cost, in pico-USD: `promptTokens` at the dearest price a prompt token may
 * be billed at (plain, cache read or cache write) and `completionTokens` at the output price, under
 * whichever of `pricings` is the dearest for each (the models the request may be answered by: its
 * own and its fallbacks). Budgets hold this from a request's admission until it is metered; with
 * no pricing, 0. A price a Pricing message leaves out (a proto3 zero) counts as 0.
 */
export function costBoundPicoUsd(pricings: readonly Partial<Pricing>[], promptTokens: number, completionTokens: number): bigint {
  let promptPrice = 0;
  let outputPrice = 0;
  for (const pricing of pricings) {
    promptPrice = Math.max(
      promptPrice,
      pricing.input_micro_usd_per_mtok ?? 0,
      pricing.cached_input_micro_usd_per_mtok ?? 0,
      pricing.cache_write_micro_usd_per_mtok ?? 0,
      pricing.cache_write_1h_micro_usd_per_mtok ?? 0,
    );
    outputPrice = Math.max(outputPrice, pricing.output_micro_usd_per_mtok ?? 0);
  }
  const tokens = (count: number) => BigInt(Math.max(0, Math.ceil(count)));
  return tokens(promptTokens) * BigInt(promptPrice) + tokens(completionTokens) * BigInt(outputPrice);
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

/**
 * The prices of an answer of `model` served by `provider`: those of the model's deployments of
 * that provider when they name their own (a deployment of another provider always does), else the
 * model's. The edge (gateway.cost_usd) and metering (the bill) both price by it, with the provider
 * the answer's usage record names.
 */
export function pricingOf(model: { pricing: Pricing; deployments?: readonly { provider?: string; pricing?: Pricing }[] }, provider: string): Pricing {
  return model.deployments?.find((deployment) => deployment.provider === provider && deployment.pricing)?.pricing ?? model.pricing;
}
