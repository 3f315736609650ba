/**
 * Cache breakpoints in Anthropic's shape: a gateway `cache_control` (`{"type":"ephemeral","ttl"?}`)
 * as Anthropic's, refusing a type other than ephemeral and a ttl other than 5m and 1h as the
 * caller's mistake (INVALID_ARGUMENT, naming the field), and set on a block.
 */
import type { CacheControlOutput } from '@gateway/proto';
import { invalidRequest } from '../parse-json-field.js';
import type { AnthropicCacheControl } from './wire-types.js';

/** A gateway cache breakpoint -> Anthropic's; undefined when none was set. */
export function cacheControlOf(control: CacheControlOutput | null | undefined, param: string): AnthropicCacheControl | undefined {
  if (!control) return undefined;
  if (control.type !== undefined && control.type !== '' && control.type !== 'ephemeral')
    throw invalidRequest(`${param}.type must be "ephemeral".`, `${param}.type`);
  if (control.ttl === undefined || control.ttl === '') return { type: 'ephemeral' };
  if (control.ttl !== '5m' && control.ttl !== '1h') throw invalidRequest(`${param}.ttl must be "5m" or "1h".`, `${param}.ttl`);
  return { type: 'ephemeral', ttl: control.ttl };
}

/** The block with the breakpoint set, when there is one. */
export function withCacheControl<Block extends { cache_control?: AnthropicCacheControl }>(block: Block, control: AnthropicCacheControl | undefined): Block {
  return control ? { ...block, cache_control: control } : block;
}
