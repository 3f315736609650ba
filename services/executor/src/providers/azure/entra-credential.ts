/**
 * Microsoft Entra ID tokens for Azure OpenAI, from the maintained @azure/identity library: the
 * credentials a server has, tried in order (what DefaultAzureCredential tries, less the developer
 * tools: Azure CLI, PowerShell, VS Code, azd, which a server must not fall back to):
 * 1. client secret or certificate: AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET (or
 *    AZURE_CLIENT_CERTIFICATE_PATH), read by EnvironmentCredential;
 * 2. workload identity on AKS: AZURE_FEDERATED_TOKEN_FILE, AZURE_TENANT_ID and AZURE_CLIENT_ID,
 *    which AKS's workload identity webhook sets;
 * 3. a managed identity (AKS kubelet identity, a VM's, App Service's).
 * The library caches each token and gets a new one before it expires, so a request costs a token
 * request only when the cached one is near its end. AZURE_AUTHORITY_HOST points them at a sovereign
 * cloud (or a test's token endpoint).
 */
import type { TokenCredential } from '@azure/identity';
import { MadeOnce } from '../made-once.js';
import { UpstreamError } from '../upstream-error.js';

/** The scope of Azure OpenAI and Azure AI Foundry (Cognitive Services) tokens. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** The credential of an identity, by its client id (undefined: the system-assigned managed identity). */
export type CredentialFactory = (clientId: string | undefined) => TokenCredential | Promise<TokenCredential>;

/**
 * The server credential chain of an identity. Instance discovery (a call to
 * login.microsoftonline.com that checks the authority is Microsoft's) is off: the authority is the
 * operator's AZURE_AUTHORITY_HOST, never a caller's, and a sovereign or private cloud has its own.
 * The library is loaded at the first Azure request: it is the largest the executor has (about 6 MiB
 * of heap), and an executor that serves no Azure model should not carry it.
 */
export const serverCredential: CredentialFactory = async (clientId) => {
  const { ChainedTokenCredential, EnvironmentCredential, ManagedIdentityCredential, WorkloadIdentityCredential } = await import('@azure/identity');
  const options = { disableInstanceDiscovery: true };
  const candidates: Array<() => TokenCredential> = [
    () => new EnvironmentCredential(options),
    () => new WorkloadIdentityCredential({ ...options, ...(clientId ? { clientId } : {}) }),
    () => new ManagedIdentityCredential(clientId ? { clientId } : {}),
  ];
  // A credential whose settings are absent may refuse to be built (workload identity without
  // AZURE_FEDERATED_TOKEN_FILE): it is left out of the chain, as DefaultAzureCredential does.
  const available = candidates.flatMap((create) => {
    try {
      return [create()];
    } catch {
      return [];
    }
  });
  return new ChainedTokenCredential(...available);
};

/** One credential per identity, created on first use and kept (with its token cache) for the process. */
export class EntraTokens {
  /** Each identity's credential (a credential that could not be created is tried again next time). */
  private readonly credentials = new MadeOnce<string, TokenCredential>();

  constructor(
    private readonly provider: string,
    private readonly create: CredentialFactory = serverCredential,
  ) {}

  /**
   * A token for Azure OpenAI; rejects with an UpstreamError when none can be had (no credential
   * configured, the identity refused): the operator's to fix, like a wrong key, so not retried.
   * The message names the failure's type only: identity errors may quote configuration.
   */
  async token(clientId: string | undefined, signal: AbortSignal): Promise<string> {
    try {
      const credential = await this.credentials.get(clientId ?? '', () => this.create(clientId));
      const token = await credential.getToken(COGNITIVE_SERVICES_SCOPE, { abortSignal: signal });
      if (!token?.token) throw new Error('the credential returned no token');
      return token.token;
    } catch (error) {
      signal.throwIfAborted();
      throw new UpstreamError(`could not obtain a Microsoft Entra ID token (${(error as Error).name ?? 'Error'})`, {
        provider: this.provider,
        kind: 'http',
        status: 401,
        retryable: false,
        failureClass: 'unusable',
        cause: error,
      });
    }
  }
}
