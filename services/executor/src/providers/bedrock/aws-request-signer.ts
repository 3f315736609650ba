/**
 * SigV4 for Bedrock: AWS's maintained signer (@smithy/signature-v4 with @aws-crypto/sha256-js)
 * over credentials from AWS's default Node credential chain (@aws-sdk/credential-providers
 * fromNodeProviderChain): environment variables, the shared config and credentials files
 * (AWS_PROFILE, SSO, credential_process), a web identity token (IRSA on EKS:
 * AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, exchanged at STS), then the ECS container and EC2
 * instance roles. The chain reads its own AWS_* variables and files (they are AWS's contract, not
 * this service's configuration), caches the credentials and refreshes them before they expire.
 * Both are loaded at the first Bedrock request, so that an executor serving no Bedrock model does
 * not carry them. An upstream naming its own `aws_credentials` signs with those instead
 * (aws-identities.ts): one signer per region and identity, so no request is ever signed with
 * another upstream's credentials.
 */
import type { SignatureV4 } from '@smithy/signature-v4';
import { MadeOnce } from '../made-once.js';
import { UpstreamError } from '../upstream-error.js';
import type { AwsCredentials, AwsCredentialsProvider, AwsIdentity } from './aws-identities.js';

export type { AwsCredentials, AwsCredentialsProvider } from './aws-identities.js';

/** The signing name of Bedrock's runtime API. */
const SERVICE = 'bedrock';

/** AWS's default credential chain for this process. */
export function defaultCredentialsProvider(): AwsCredentialsProvider {
  let chain: Promise<AwsCredentialsProvider> | undefined;
  return async () => {
    chain ??= import('@aws-sdk/credential-providers').then(({ fromNodeProviderChain }) => fromNodeProviderChain());
    return (await chain)();
  };
}

/** One request to sign. */
export interface SignableRequest {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The region the request is signed for. */
  readonly region: string;
  /** Whose credentials sign it. */
  readonly identity: AwsIdentity;
}

/** Signs Bedrock requests; one signer per region and identity. */
export class AwsRequestSigner {
  private readonly signers = new MadeOnce<string, SignatureV4>();

  constructor(private readonly provider: string) {}

  /**
   * The request's headers with `host`, `x-amz-date`, `x-amz-content-sha256`, the session token
   * when there is one, and `authorization`. A chain that finds no credentials is an
   * UpstreamError the caller sees as the model being unavailable (the credentials' own message,
   * which names no secret, goes to the log).
   */
  async sign(request: SignableRequest): Promise<Record<string, string>> {
    const signer = await this.signerFor(request.region, request.identity);
    const signed = await signer.sign({
      method: 'POST',
      protocol: request.url.protocol,
      hostname: request.url.hostname,
      ...(request.url.port ? { port: Number(request.url.port) } : {}),
      path: request.url.pathname,
      query: {},
      headers: { ...request.headers, host: request.url.host },
      body: request.body,
    });
    return signed.headers as Record<string, string>;
  }

  private signerFor(region: string, identity: AwsIdentity): Promise<SignatureV4> {
    return this.signers.get(JSON.stringify([region, identity.key]), async () => {
      const [{ SignatureV4 }, { Sha256 }] = await Promise.all([import('@smithy/signature-v4'), import('@aws-crypto/sha256-js')]);
      return new SignatureV4({ service: SERVICE, region, sha256: Sha256, credentials: () => this.resolveCredentials(identity.credentials) });
    });
  }

  private async resolveCredentials(credentials: AwsCredentialsProvider): Promise<AwsCredentials> {
    try {
      return await credentials();
    } catch (error) {
      throw new UpstreamError(`no AWS credentials to sign with: ${(error as Error).message}`, {
        provider: this.provider,
        kind: 'connection',
        failureClass: 'unavailable',
        retryable: false,
        cause: error,
      });
    }
  }
}
