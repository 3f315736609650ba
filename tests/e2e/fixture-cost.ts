/**
 * What the recorded answer `chat-completion.json` (the fake upstreams' usual reply) costs on a model
 * of a test's catalog, priced as metering prices it: tests that spend budgets in whole answers
 * compare with it.
 */
import { fixture } from '@gateway/testing';
import { costPicoUsd, loadCatalog } from '@gateway/catalog';

/** The token usage the recorded answer reports. */
export interface FixtureUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** The recorded answer's usage. */
export function fixtureUsage(): FixtureUsage {
  return (JSON.parse(fixture('chat-completion.json')) as { usage: FixtureUsage }).usage;
}

/** What one recorded answer of `model` costs, in picodollars, at the prices of the catalog at `catalogPath`. */
export function fixtureAnswerCost(catalogPath: string, model: string): bigint {
  const usage = fixtureUsage();
  return costPicoUsd(loadCatalog(catalogPath).byId.get(model)!.pricing, {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: usage.prompt_tokens_details.cached_tokens,
  });
}
