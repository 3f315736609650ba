/**
 * What the gRPC handlers of keys, teams and admin access do alike with their input: a limit or a
 * budget message as a limit, and a store's refusal of a value as the caller's invalid_request.
 */
import { GatewayError } from '@gateway/grpc';
import type { BudgetOutput, MinuteLimitOutput } from '@gateway/proto';
import { KeyInputError } from './input-error.js';
import type { BudgetLimit, Limit } from './limits.js';

/**
 * A limit message as received (a MinuteLimit or a Budget): its positive `field`, 'unlimited', null
 * for plan_default (remove the override), undefined when absent. A `field` that is not a positive
 * integer is refused with the message's name, `param`.
 */
function fromLimitMessage<Field extends 'per_minute' | 'micro_usd'>(
  message: ({ value?: string; unlimited?: boolean; plan_default?: boolean } & { [name in Field]?: number | string }) | null | undefined,
  field: Field,
  param: string,
): number | 'unlimited' | null | undefined {
  if (!message) return undefined;
  if (message.value === 'unlimited' && message.unlimited) return 'unlimited';
  if (message.value === 'plan_default' && message.plan_default) return null;
  if (message.value === field) {
    const value = Number(message[field]);
    if (Number.isSafeInteger(value) && value > 0) return value;
  }
  throw GatewayError.of('invalid_request', `${param} must be a positive ${field}, unlimited or plan_default.`, { param });
}

/**
 * A MinuteLimit as received: a limit, null for plan_default (remove the override), undefined when
 * absent. A per_minute that is not positive is refused with the field's name.
 */
export function fromMinuteLimit(message: MinuteLimitOutput | null | undefined, param: string): Limit | null | undefined {
  return fromLimitMessage(message, 'per_minute', param);
}

/**
 * A Budget as received: micro-USD, null for plan_default (remove the override), undefined when
 * absent. A micro_usd that is not positive is refused with the field's name.
 */
export function fromBudget(message: BudgetOutput | null | undefined, param: string): BudgetLimit | null | undefined {
  return fromLimitMessage(message, 'micro_usd', param);
}

/** A store's refusal of the input (KeyInputError) as the caller's invalid_request; undefined for any other error. */
export function invalidInput(error: unknown): GatewayError | undefined {
  return error instanceof KeyInputError ? GatewayError.of('invalid_request', error.message, { param: error.param }) : undefined;
}

/**
 * Runs a store operation of an AuthService handler: a store failure leaves as UNAVAILABLE with
 * `message`, logged with the request id when there is one.
 */
export type StoreCall = <T>(operation: () => Promise<T>, message: string, requestId?: string) => Promise<T>;

/** Logs a handler's unexpected failure with the method it failed in. */
export type FailureReport = (error: unknown, method: string) => void;
