/**
 * The AuthService's key calls as a test or a benchmark makes them: typed, each with the same call
 * options (a deadline, an actor), on one client of the service.
 */
import { type CallOptions, callUnary } from '@gateway/grpc';
import type {
  AuthServiceClient,
  CheckKeyRequest,
  CheckKeyResponseOutput,
  CreateKeyRequest,
  CreateKeyResponseOutput,
  KeyInfoOutput,
  ListKeysRequest,
  ListKeysResponseOutput,
  RevokeKeyRequest,
  SettleUsageRequest,
  SettleUsageResponseOutput,
} from '@gateway/proto';

/** The calls of `authCalls`. */
export interface AuthCalls {
  createKey(request: CreateKeyRequest): Promise<CreateKeyResponseOutput>;
  checkKey(request: CheckKeyRequest): Promise<CheckKeyResponseOutput>;
  settleUsage(request: SettleUsageRequest): Promise<SettleUsageResponseOutput>;
  listKeys(request: ListKeysRequest): Promise<ListKeysResponseOutput>;
  revokeKey(request: RevokeKeyRequest): Promise<KeyInfoOutput>;
}

/** CreateKey, CheckKey, SettleUsage, ListKeys and RevokeKey on `client`, each with `options`. */
export function authCalls(client: AuthServiceClient, options: CallOptions): AuthCalls {
  return {
    createKey: (request) => callUnary(client, client.CreateKey, request, options),
    checkKey: (request) => callUnary(client, client.CheckKey, request, options),
    settleUsage: (request) => callUnary(client, client.SettleUsage, request, options),
    listKeys: (request) => callUnary(client, client.ListKeys, request, options),
    revokeKey: (request) => callUnary(client, client.RevokeKey, request, options),
  };
}
