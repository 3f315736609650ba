/**
 * The edge's per-completion metrics, named after OpenTelemetry's GenAI semantic conventions mapped
 * to Prometheus (dots to underscores, the unit as a suffix): `gen_ai_client_operation_duration_seconds`,
 * `gen_ai_client_token_usage`, `gen_ai_server_time_to_first_token_seconds`,
 * `gen_ai_server_time_per_output_token_seconds`, with the conventions' attributes
 * (`gen_ai_operation_name`, `gen_ai_provider_name`, `gen_ai_request_model`, `gen_ai_response_model`,
 * `error_type`) and the key's plan. Beside them the gateway's own: spend, fallbacks, completions in
 * flight. Never a key, and a key id only where the operator opts in (EDGE_METRICS_KEY_ID, on spend
 * only): every other label has a bounded set of values (the catalog's models and providers, the
 * plans, the outcomes).
 */
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** Buckets the conventions recommend for each instrument. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
const FIRST_TOKEN_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const PER_TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];

/** One completion as the edge saw it end. */
export interface CompletionObservation {
  /** The GenAI operation: `chat` (the completion APIs) or `embeddings`; absent: `chat`. */
  operation?: string;
  /** What the caller asked for: a model id, or `auto`. */
  requestModel: string;
  /** The model that answered (another than the routed one after a fallback). */
  responseModel: string;
  /** The model routing chose first. */
  routedModel: string;
  /** The catalog provider of the model that answered (`openai-compatible`, `anthropic`, ...). */
  provider: string;
  /** The key's plan: `starter`, `pro` or `enterprise`. */
  plan: string;
  /** The key's public id; a label only where the operator opted in (GenAiMetricsOptions.keyId). */
  keyId?: string;
  stream: boolean;
  /** '' when completed; else why not (`cancelled`, `failed`). */
  errorType: string;
  durationSeconds: number;
  /** Streams only: from the request to the first chunk of content. */
  firstTokenSeconds?: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** A plan as the metrics name it: `PLAN_PRO` -> `pro`. */
export function planName(plan: string | undefined): string {
  return (plan ?? '').replace(/^PLAN_/, '').toLowerCase() || 'unknown';
}

type Observer = { observe(value: number): void };
type Incrementer = { inc(value?: number): void };

/** The labels of every per-completion metric (the duration and the tokens add one each). */
const COMPLETION_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_response_model', 'plan', 'stream'];

/** The metrics, each a row of the shared metric table; spend by key id too with `keyIdLabel`. */
function genAiMetricTable(registry: prometheus.Registry, keyIdLabel: boolean) {
  // biome-ignore format: one metric a line, a table of name, help, buckets and labels
  return serviceMetrics(registry, {
    duration: metric.histogram('gen_ai_client_operation_duration_seconds', 'Duration of chat completions through the gateway, from the request to the last byte.', DURATION_BUCKETS, [...COMPLETION_LABELS, 'error_type']),
    tokens: metric.histogram('gen_ai_client_token_usage', 'Tokens per chat completion, by type (input, output).', TOKEN_BUCKETS, [...COMPLETION_LABELS, 'gen_ai_token_type']),
    firstToken: metric.histogram('gen_ai_server_time_to_first_token_seconds', 'Time from the request to the first chunk of a streamed completion.', FIRST_TOKEN_BUCKETS, COMPLETION_LABELS),
    perToken: metric.histogram('gen_ai_server_time_per_output_token_seconds', 'Time per output token after the first, of streamed completions.', PER_TOKEN_BUCKETS, COMPLETION_LABELS),
    cost: metric.counterBy('gateway_cost_usd_total', "What the completions cost at the catalog's prices, in USD.", keyIdLabel ? [...COMPLETION_LABELS, 'key_id'] : COMPLETION_LABELS),
    fallbacks: metric.counterBy('gateway_fallbacks_total', 'Completions answered by another model than the one routed to, by both models.', ['gen_ai_request_model', 'gen_ai_response_model']),
    inFlight: metric.gauge('gateway_completions_in_flight', 'Chat completions the edge is serving now (a scaling signal: they mostly wait on upstreams).'),
  });
}

/** The edge's GenAI metrics on a registry; observe() once per completion. */
export class GenAiMetrics {
  private readonly metrics: ReturnType<typeof genAiMetricTable>;
  // Label children per combination: a label lookup per observation is a measurable share of the edge.
  private readonly children = new Map<
    string,
    { duration: Observer; input: Observer; output: Observer; firstToken: Observer; perToken: Observer; cost: Incrementer }
  >();
  private readonly fallbackChildren = new Map<string, Incrementer>();
  private readonly keyIdLabel: boolean;

  /** `keyId`: label spend by API key id too (EDGE_METRICS_KEY_ID), one series per key and model. */
  constructor(registry: prometheus.Registry, options: { keyId?: boolean } = {}) {
    this.keyIdLabel = options.keyId === true;
    this.metrics = genAiMetricTable(registry, this.keyIdLabel);
  }

  /** A completion started; call the returned function once when it is over, however it ends. */
  started(): () => void {
    this.metrics.inFlight.inc();
    let over = false;
    return () => {
      if (over) return;
      over = true;
      this.metrics.inFlight.dec();
    };
  }

  /** Records one completion that reached the executor. */
  observe(completion: CompletionObservation): void {
    const keyId = this.keyIdLabel ? (completion.keyId ?? '') : '';
    const operation = completion.operation ?? 'chat';
    const key = `${operation}\u0000${completion.provider}\u0000${completion.requestModel}\u0000${completion.responseModel}\u0000${completion.plan}\u0000${completion.stream}\u0000${completion.errorType}\u0000${keyId}`;
    let child = this.children.get(key);
    if (!child) {
      const labels = {
        gen_ai_operation_name: operation,
        gen_ai_provider_name: completion.provider || 'unknown',
        gen_ai_request_model: completion.requestModel,
        gen_ai_response_model: completion.responseModel,
        plan: completion.plan,
        stream: String(completion.stream),
      };
      child = {
        duration: this.metrics.duration.labels({ ...labels, error_type: completion.errorType }),
        input: this.metrics.tokens.labels({ ...labels, gen_ai_token_type: 'input' }),
        output: this.metrics.tokens.labels({ ...labels, gen_ai_token_type: 'output' }),
        firstToken: this.metrics.firstToken.labels(labels),
        perToken: this.metrics.perToken.labels(labels),
        cost: this.metrics.cost.labels(this.keyIdLabel ? { ...labels, key_id: keyId } : labels),
      };
      this.children.set(key, child);
    }
    child.duration.observe(completion.durationSeconds);
    child.input.observe(completion.inputTokens);
    child.output.observe(completion.outputTokens);
    if (completion.costUsd > 0) child.cost.inc(completion.costUsd);
    if (completion.firstTokenSeconds !== undefined) {
      child.firstToken.observe(completion.firstTokenSeconds);
      if (completion.outputTokens > 1 && completion.errorType === '')
        child.perToken.observe((completion.durationSeconds - completion.firstTokenSeconds) / (completion.outputTokens - 1));
    }
    if (completion.routedModel && completion.responseModel !== completion.routedModel) {
      const fallbackKey = `${completion.routedModel}\u0000${completion.responseModel}`;
      let counter = this.fallbackChildren.get(fallbackKey);
      if (!counter)
        this.fallbackChildren.set(
          fallbackKey,
          (counter = this.metrics.fallbacks.labels({ gen_ai_request_model: completion.routedModel, gen_ai_response_model: completion.responseModel })),
        );
      counter.inc();
    }
  }
}
