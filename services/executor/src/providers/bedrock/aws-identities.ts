/**
 * The AWS identity of each Bedrock upstream, so that one executor serves models in several AWS
 * accounts: an upstream's catalog `aws_credentials` names where its credentials come from, through
 * AWS's own providers (@aws-sdk/credential-providers):
 * - a source: `profile` (fromIni: the shared config and credentials files, with their SSO,
 *   credential_process and role chaining), keys in the variables `access_key_id_env` /
 *   `secret_access_key_env` / `session_token_env` (read from the executor's environment at each
 *   signing, like fromEnv but under the names the catalog gives), or else the process's default
 *   chain (aws-request-signer.ts);
 * - optionally `role_arn`: fromTemporaryCredentials, STS AssumeRole signed with the source, with
 *   `external_id` and `session_name` (default `llm-gateway`), at the upstream's region's STS
 *   (AWS_ENDPOINT_URL_STS, AWS's own variable, for a private or test endpoint).
 * One provider per distinct identity and region, made at its first use and kept for the process:
 * temporary credentials are cached until five minutes before they expire (@smithy/core's
 * memoizeIdentityProvider, the SDK clients' own cache), so a request costs an STS call only when
 * they near their end. Upstreams of different identities never share a provider, a cache or a
 * signer; an upstream without `aws_credentials` signs with the default chain.
 */
import type { AwsCredentialsSource, Upstream } from '@gateway/catalog';

/** AWS credentials: long-lived keys, or temporary ones with their session token. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** Resolves the credentials to sign with (the providers cache and refresh them). */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

/** The role session's name when the catalog gives none. */
export const DEFAULT_ROLE_SESSION_NAME = 'llm-gateway';

/** An upstream's identity: a key telling identities apart, and its credentials. */
export interface AwsIdentity {
  /** Equal for two upstreams exactly when they sign as the same identity. */
  readonly key: string;
  readonly credentials: AwsCredentialsProvider;
}

/** The AWS identities of the Bedrock upstreams. */
export class AwsIdentities {
  private readonly identities = new Map<string, AwsIdentity>();
  private readonly defaultIdentity: AwsIdentity;

  /** `environment` holds the key variables the catalog names; `defaultChain` signs upstreams that name no identity. */
  constructor(
    private readonly environment: Readonly<Record<string, string | undefined>>,
    defaultChain: AwsCredentialsProvider,
  ) {
    this.defaultIdentity = { key: 'default', credentials: defaultChain };
  }

  /** The identity `upstream` signs as. */
  of(upstream: Upstream): AwsIdentity {
    const source = upstream.aws_credentials;
    if (source === undefined || Object.keys(source).length === 0) return this.defaultIdentity;
    // The region is part of the key: a role is assumed at its upstream's regional STS.
    const key = JSON.stringify([source, source.role_arn === undefined ? null : (upstream.region ?? null)]);
    let identity = this.identities.get(key);
    if (!identity) {
      identity = { key, credentials: this.providerOf(source, upstream.region) };
      this.identities.set(key, identity);
    }
    return identity;
  }

  private providerOf(source: AwsCredentialsSource, region: string | undefined): AwsCredentialsProvider {
    const base = this.sourceOf(source);
    if (source.role_arn === undefined) return base;
    const roleArn = source.role_arn;
    let assumed: Promise<AwsCredentialsProvider> | undefined;
    return async () => {
      assumed ??= Promise.all([import('@aws-sdk/credential-providers'), import('@smithy/core')]).then(
        ([{ fromTemporaryCredentials }, { memoizeIdentityProvider, isIdentityExpired, doesIdentityRequireRefresh }]) => {
          const provider = fromTemporaryCredentials({
            params: {
              RoleArn: roleArn,
              RoleSessionName: source.session_name ?? DEFAULT_ROLE_SESSION_NAME,
              ...(source.external_id === undefined ? {} : { ExternalId: source.external_id }),
            },
            masterCredentials: base,
            clientConfig: region === undefined ? {} : { region },
          });
          return memoizeIdentityProvider(provider, isIdentityExpired, doesIdentityRequireRefresh) as AwsCredentialsProvider;
        },
      );
      return (await assumed)();
    };
  }

  /** The credentials a role is assumed with, or signed with when there is no role. */
  private sourceOf(source: AwsCredentialsSource): AwsCredentialsProvider {
    const { profile, access_key_id_env: keyIdVariable, secret_access_key_env: secretVariable, session_token_env: tokenVariable } = source;
    if (profile !== undefined) {
      let fromProfile: Promise<AwsCredentialsProvider> | undefined;
      return async () => {
        fromProfile ??= Promise.all([import('@aws-sdk/credential-providers'), import('@smithy/core')]).then(
          ([{ fromIni }, { memoizeIdentityProvider, isIdentityExpired, doesIdentityRequireRefresh }]) =>
            memoizeIdentityProvider(fromIni({ profile }), isIdentityExpired, doesIdentityRequireRefresh) as AwsCredentialsProvider,
        );
        return (await fromProfile)();
      };
    }
    if (keyIdVariable !== undefined && secretVariable !== undefined) {
      // Read at each signing: a rotated Secret reaches the pod's environment only with a restart,
      // but a test (or a runner that updates it) sees the current value. The message names the
      // variable, never its value.
      return async (): Promise<AwsCredentials> => {
        const value = (name: string): string => {
          const text = this.environment[name];
          if (!text) throw new Error(`the variable ${name} that aws_credentials names is not set`);
          return text;
        };
        const sessionToken = tokenVariable === undefined ? undefined : value(tokenVariable);
        return { accessKeyId: value(keyIdVariable), secretAccessKey: value(secretVariable), ...(sessionToken ? { sessionToken } : {}) };
      };
    }
    return this.defaultIdentity.credentials;
  }
}
