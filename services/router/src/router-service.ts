import { callTraceparent, GatewayError, requestIdOf, unary } from '@gateway/grpc';
import { endWithError, NO_TRACING, SpanKind, type Tracing } from '@gateway/observability';
import { AUTO_MODEL_ID, type CatalogModel } from '@gateway/catalog';
import type { CatalogSnapshot, RouteRequestOutput, RouteResponse, RouterServiceHandlers } from '@gateway/proto';
import type { Logger } from '@gateway/logger';
import type { CatalogState } from './catalog-state.js';
import type { AutoRouterScorer } from './auto-router-model.js';
import { chooseAutoModel, RETRY_AFTER_MS } from './choose-auto-model.js';
import { policyLabel, readPolicy } from './routing-policy.js';
import type { RouterMetrics } from './router-metrics.js';
import { readTraits, traitRefusal, type Traits } from './trait-refusal.js';
import { QUALITY_TIER_ENUM } from './model-message.js';

/** A server call of WatchCatalog and of Route, as grpc-js hands them to the handlers. */
type WatchCall = Parameters<RouterServiceHandlers['WatchCatalog']>[0];
type RouteCall = Parameters<RouterServiceHandlers['Route']>[0];

/** The policy reported, and counted, for a request that named its model. */
export const EXPLICIT_POLICY = 'explicit';

/** What the router service needs. */
export interface RouterServiceDependencies {
  state: CatalogState;
  logger: Logger;
  metrics: RouterMetrics;
  /** The `auto` scorer (the shipped model file, loaded once at start). */
  scorer: AutoRouterScorer;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
}

/** The RouterService handlers, and a way to end every open WatchCatalog stream at shutdown. */
export interface RouterService {
  readonly handlers: RouterServiceHandlers;
  /**
   * Ends every open watch with OK so that a graceful shutdown does not wait for streams that
   * never end on their own; watchers reconnect to another replica.
   */
  endWatches(): void;
}

/** Builds the gateway.router.v1.RouterService implementation. */
export function createRouterService({ state, logger, metrics, scorer, tracing = NO_TRACING }: RouterServiceDependencies): RouterService {
  const watches = new Map<WatchCall, () => void>();
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'router handler failed');

  /**
   * Route: an explicit id must be switched on (else NOT_FOUND model_not_found), able to serve the
   * traits (else INVALID_ARGUMENT) and available (else UNAVAILABLE model_unavailable); "auto"
   * goes through chooseAutoModel. Fallbacks are the chosen model's catalog chain, keeping only
   * models that are on, available and able to serve the same traits.
   */
  /** Route, in a span of its own when tracing is on: the decision as its attributes. */
  async function route(request: RouteRequestOutput, call: RouteCall): Promise<RouteResponse> {
    const span = tracing.startSpan('router.route', {
      kind: SpanKind.SERVER,
      parent: callTraceparent(call),
      attributes: { 'rpc.system': 'grpc', 'rpc.method': 'Route', 'gen_ai.request.model': request.model ?? '' },
    });
    if (!span) return decide(request, call);
    try {
      const response = await decide(request, call);
      span.setAttributes({
        'gateway.routed_to': response.model_id ?? '',
        'gateway.auto.policy': response.policy ?? '',
        'gateway.auto.tier': String(response.tier ?? ''),
        'gateway.auto.score': response.score ?? 0,
        'gateway.fallbacks': (response.fallbacks ?? []).join(','),
      });
      span.end();
      return response;
    } catch (error) {
      endWithError(span, error instanceof GatewayError ? error.reason : 'internal_error');
      throw error;
    }
  }

  async function decide(request: RouteRequestOutput, call: RouteCall): Promise<RouteResponse> {
    const traits = readTraits(request.traits);
    const policy = readPolicy(request.policy);
    const requested = request.model ?? '';
    let response: RouteResponse;
    let label: string;
    if (requested === AUTO_MODEL_ID) {
      const score = scorer.score(request.prompt_text ?? '');
      const choice = chooseAutoModel({
        models: state.enabledModels(),
        isAvailable: (id) => state.isAvailable(id),
        traits,
        score,
        policy,
        thresholds: scorer.model.tierThresholds,
      });
      response = {
        model_id: choice.model.id,
        fallbacks: usableFallbacks(choice.model, traits),
        score,
        policy: policy.name,
        tier: choice.tier ?? '',
        reason: choice.reason,
        ...(choice.tier ? { quality_tier: QUALITY_TIER_ENUM[choice.tier] } : {}),
        ranked: choice.ranked.map((model) => model.id),
      };
      label = policyLabel(policy);
    } else {
      const model = explicitModel(requested, traits);
      response = { model_id: model.id, fallbacks: usableFallbacks(model, traits), policy: EXPLICIT_POLICY };
      label = EXPLICIT_POLICY;
    }
    metrics.decisions.inc({ model: response.model_id, policy: label });
    logger.debug(
      {
        request_id: request.request_id || requestIdOf(call),
        requested,
        model: response.model_id,
        policy: response.policy,
        score: response.score,
        tier: response.tier,
      },
      'routed',
    );
    return response;
  }

  function explicitModel(id: string, traits: Traits): CatalogModel {
    const model = state.enabledModel(id);
    if (!model) {
      throw GatewayError.of('model_not_found', `The model \`${id}\` does not exist or you do not have access to it.`, {
        param: 'model',
      });
    }
    const refusal = traitRefusal(model, traits);
    if (refusal) throw refusal;
    if (!state.isAvailable(model.id)) {
      throw GatewayError.of('model_unavailable', `The model \`${id}\` is temporarily unavailable. Please retry later.`, {
        retryAfterMs: RETRY_AFTER_MS,
        retryable: true,
      });
    }
    return model;
  }

  function usableFallbacks(model: CatalogModel, traits: Traits): string[] {
    return model.fallbacks.filter((id) => {
      const fallback = state.enabledModel(id);
      return fallback !== undefined && state.isAvailable(id) && traitRefusal(fallback, traits) === undefined;
    });
  }

  /** WatchCatalog: the current snapshot at once, then one per change, until the client cancels. */
  function watchCatalog(call: WatchCall): void {
    const send = (snapshot: CatalogSnapshot) => {
      if (!call.cancelled && call.writable) call.write(snapshot);
    };
    const unsubscribe = state.subscribe(send);
    const stop = () => {
      unsubscribe();
      watches.delete(call);
    };
    watches.set(call, stop);
    call.once('cancelled', stop);
    call.once('error', stop);
    send(state.snapshot());
  }

  return {
    handlers: {
      Route: unary(route, 'Route', report),
      WatchCatalog: watchCatalog,
    },
    endWatches() {
      for (const [call, stop] of [...watches]) {
        stop();
        call.end();
      }
    },
  };
}
