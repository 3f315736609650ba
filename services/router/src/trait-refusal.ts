import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { CatalogModel } from '@gateway/catalog';
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
  };
}

/**
 * Why a model cannot serve a request, as the error the caller gets, or undefined when it can.
 * Checks run from the most specific to the most general, so the error names the first field the
 * caller would have to change. Parameters are named as in the chat-completions request (`tools`,
 * `messages`, `max_tokens`) and messages follow OpenAI's wording, so the edge passes them on.
 */
export function traitRefusal(model: CatalogModel, traits: Traits): GatewayError | undefined {
  const unsupported = (param: string, message: string) => new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'unsupported_parameter', message, { param });
  if (traits.needsTools && !model.capabilities.tools) return unsupported('tools', `The model \`${model.id}\` does not support tools.`);
  if (traits.needsVision && !model.capabilities.vision) return unsupported('messages', `The model \`${model.id}\` does not support image inputs.`);
  if (traits.needsJsonMode && !model.capabilities.json_mode) return unsupported('response_format', `The model \`${model.id}\` does not support JSON mode (response_format).`);
  if (traits.stream && !model.capabilities.streaming) return unsupported('stream', `The model \`${model.id}\` does not support streaming.`);
  if (traits.maxTokens > model.max_output_tokens) {
    return unsupported('max_tokens', `max_tokens is too large: ${traits.maxTokens}. The model \`${model.id}\` supports at most ${model.max_output_tokens} completion tokens.`);
  }
  const requested = traits.promptTokens + traits.maxTokens;
  if (requested > model.context_window) {
    return new GatewayError(
      GrpcStatus.INVALID_ARGUMENT,
      'context_length_exceeded',
      `This model's maximum context length is ${model.context_window} tokens. However, you requested ${requested} tokens (${traits.promptTokens} in the messages, ${traits.maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      { param: 'messages' },
    );
  }
  return undefined;
}
