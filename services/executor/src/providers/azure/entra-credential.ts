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
 *
 * An upstream naming its own `azure_credential` in the catalog takes its tokens as that application
 * only (applicationCredentials): a ClientSecretCredential of its tenant, client id and the secret in
 * the variable it names; without a secret, workload identity for its client id (each app
 * registration trusting the executor's ServiceAccount), else the managed identity of that client
 * id. Never the process's EnvironmentCredential, whose AZURE_CLIENT_SECRET is another
 * application's. One credential (and token cache) per distinct application.
 */
import type { ClientSecretCredentialOptions, TokenCredential } from '@azure/identity';
import type { AzureCredentialSource } from '@gateway/catalog';
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
  return chainOfAvailable(ChainedTokenCredential, candidates);
};

/**
 * A chain of the candidates that can be built: a credential whose settings are absent may refuse to
 * be built (workload identity without AZURE_FEDERATED_TOKEN_FILE), and is left out of the chain, as
 * DefaultAzureCredential does.
 */
function chainOfAvailable(Chain: new (...sources: TokenCredential[]) => TokenCredential, candidates: Array<() => TokenCredential>): TokenCredential {
  const available = candidates.flatMap((create) => {
    try {
      return [create()];
    } catch {
      return [];
    }
  });
  return new Chain(...available);
}

/** The credential of a catalog-named application, given the value of its secret variable (undefined: none named). */
export type ApplicationCredentialFactory = (source: AzureCredentialSource, secret: string | undefined) => TokenCredential | Promise<TokenCredential>;

/**
 * The credentials of catalog-named applications; `options` go to each (a test's authorityHost and
 * CA; AZURE_AUTHORITY_HOST, the library's own variable, otherwise).
 */
export function applicationCredentials(options: Pick<ClientSecretCredentialOptions, 'authorityHost' | 'tlsOptions'> = {}): ApplicationCredentialFactory {
  return async (source, secret) => {
    const { ChainedTokenCredential, ClientSecretCredential, ManagedIdentityCredential, WorkloadIdentityCredential } = await import('@azure/identity');
    const common = { ...options, disableInstanceDiscovery: true };
    if (source.client_secret_env !== undefined) {
      if (!secret) throw new Error(`the variable ${source.client_secret_env} that azure_credential names is not set`);
      return new ClientSecretCredential(source.tenant_id ?? '', source.client_id, secret, common);
    }
    const candidates: Array<() => TokenCredential> = [
      () => new WorkloadIdentityCredential({ ...common, clientId: source.client_id, ...(source.tenant_id ? { tenantId: source.tenant_id } : {}) }),
      () => new ManagedIdentityCredential({ clientId: source.client_id }),
    ];
    return chainOfAvailable(ChainedTokenCredential, candidates);
  };
}

/** One credential per identity, created on first use and kept (with its token cache) for the process. */
export class EntraTokens {
  /** Each identity's credential (a credential that could not be created is tried again next time). */
  private readonly credentials = new MadeOnce<string, TokenCredential>();

  constructor(
    private readonly provider: string,
    private readonly create: CredentialFactory = serverCredential,
    private readonly createApplication: ApplicationCredentialFactory = applicationCredentials(),
  ) {}

  /**
   * A token as the catalog-named application `source`, its secret read from `environment`; rejects
   * as `token` does.
   */
  applicationToken(source: AzureCredentialSource, environment: Readonly<Record<string, string | undefined>>, signal: AbortSignal): Promise<string> {
    const secret = source.client_secret_env === undefined ? undefined : environment[source.client_secret_env];
    // The key holds the secret's variable, not its value: a rotated value needs a restart, as any key does.
    const key = `application ${JSON.stringify(source)}`;
    return this.tokenOf(key, () => this.createApplication(source, secret), signal);
  }

  /**
   * A token for Azure OpenAI; rejects with an UpstreamError when none can be had (no credential
   * configured, the identity refused): the operator's to fix, like a wrong key, so not retried.
   * The message names the failure's type only: identity errors may quote configuration.
   */
  token(clientId: string | undefined, signal: AbortSignal): Promise<string> {
    return this.tokenOf(`process ${clientId ?? ''}`, () => this.create(clientId), signal);
  }

  private async tokenOf(key: string, create: () => TokenCredential | Promise<TokenCredential>, signal: AbortSignal): Promise<string> {
    try {
      const credential = await this.credentials.get(key, create);
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
