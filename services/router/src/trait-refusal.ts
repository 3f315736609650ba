import { GatewayError } from '@gateway/grpc';
import { capabilityProblem, type CatalogModel } from '@gateway/catalog';
import type { RequestTraitsOutput } from '@gateway/proto';

/** The request traits the router reads, with proto3 defaults filled in. */
export interface Traits {
  needsTools: boolean;
  needsVision: boolean;
  needsJsonMode: boolean;
  stream: boolean;
  promptTokens: number;
  /** 0 when the caller set no budget. */
  maxTokens: number;
  /** The request is for embeddings: only embedding models serve it. */
  embeddings: boolean;
}

/** Reads the traits of a RouteRequest; absent fields are proto3 defaults (false, 0). */
export function readTraits(traits: RequestTraitsOutput | undefined | null): Traits {
  return {
    needsTools: traits?.needs_tools ?? false,
    needsVision: traits?.needs_vision ?? false,
    needsJsonMode: traits?.needs_json_mode ?? false,
    stream: traits?.stream ?? false,
    promptTokens: Math.max(0, traits?.prompt_tokens ?? 0),
    maxTokens: Math.max(0, traits?.max_tokens ?? 0),
    embeddings: traits?.embeddings ?? false,
  };
}

/**
 * Why a model cannot serve a request, as the error the caller gets, or undefined when it can: the
 * catalog's one capability rule set (capabilityProblem, shared with the edge), as an
 * INVALID_ARGUMENT status that the edge passes on with its param and code.
 */
export function traitRefusal(model: CatalogModel, traits: Traits): GatewayError | undefined {
  const problem = capabilityProblem(model, {
    embeddings: traits.embeddings,
    tools: traits.needsTools,
    vision: traits.needsVision,
    jsonMode: traits.needsJsonMode,
    stream: traits.stream,
    promptTokens: traits.promptTokens,
    maxTokens: traits.maxTokens,
  });
  return problem && GatewayError.of(problem.code, problem.message, { param: problem.param });
}
