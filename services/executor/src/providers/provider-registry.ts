/**
 * Which adapter serves a catalog model: one per catalog `provider` (simulated, openai-compatible,
 * anthropic, gemini, azure). A provider no adapter speaks (a catalog newer than this executor) is a
 * normal, stable failure: UNAVAILABLE `model_unavailable`, so the router can fall back to another
 * model.
 */
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError } from '@gateway/grpc';
import { AnthropicProvider } from './anthropic/anthropic-provider.js';
import { AzureProvider, type AzureDependencies } from './azure/azure-provider.js';
import { GeminiProvider } from './gemini/gemini-provider.js';
import { OpenAiCompatibleProvider } from './openai-compatible/openai-compatible-provider.js';
import type { Provider } from './provider.js';
import { SimulatedProvider } from './simulated/simulated-provider.js';

/** The adapters of one executor process. */
export class ProviderRegistry {
  private readonly providers: ReadonlyMap<string, Provider>;

  constructor(dependencies: AzureDependencies) {
    const providers: Provider[] = [
      new SimulatedProvider(),
      new OpenAiCompatibleProvider(dependencies),
      new AnthropicProvider(dependencies),
      new GeminiProvider(dependencies),
      new AzureProvider(dependencies),
    ];
    this.providers = new Map(providers.map((provider) => [provider.name, provider]));
  }

  /** The adapter of a model's provider; throws UNAVAILABLE `model_unavailable` for a provider no adapter speaks. */
  forModel(model: CatalogModel): Provider {
    const provider = this.providers.get(model.provider);
    if (!provider) {
      throw GatewayError.of('model_unavailable', `Model ${model.id} uses the ${model.provider} provider, which this executor does not support.`, {
        provider: model.provider,
        retryable: false,
      });
    }
    return provider;
  }
}
