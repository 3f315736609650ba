/**
 * A provider adapter's refusal of what it cannot translate (HTTP 400, the caller's to fix): its
 * message names the provider, and an adapter that builds its body through another's conversion
 * (Bedrock's Converse through Anthropic's Messages body) recognizes that conversion's refusals by
 * their class and gives them again under its own name.
 */
import { ERROR_REASONS, type ErrorReason, GatewayError } from '@gateway/grpc';

/** A refusal; its message is "The <provider> provider <says>". */
export class ProviderRefusal extends GatewayError {
  constructor(
    readonly refusing: string,
    readonly says: string,
    readonly options: { param: string; reason?: ErrorReason },
  ) {
    const reason = options.reason ?? 'invalid_request';
    const entry = ERROR_REASONS[reason];
    super(entry.grpc, reason, `The ${refusing} provider ${says}`, { param: options.param, retryable: entry.retryable });
    this.name = 'ProviderRefusal';
  }

  /** The same refusal, naming another provider. */
  naming(provider: string): ProviderRefusal {
    return new ProviderRefusal(provider, this.says, this.options);
  }
}
