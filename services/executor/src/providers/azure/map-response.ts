/**
 * Azure OpenAI answers in OpenAI's shapes, finish reasons and usage included: a completion its
 * content filter cut or withheld ends with finish_reason `content_filter`, which OpenAI's table
 * maps already, and the filter's per-choice results are dropped (the finish reason says what a
 * client needs). A stream's first chunk, which carries only `prompt_filter_results` and no
 * choice, is skipped like any chunk without choices. This file names that reuse.
 */
export { fromOpenAiChunk, fromOpenAiResponse, mapFinishReason, usageOfChunk } from '../openai-compatible/map-response.js';
