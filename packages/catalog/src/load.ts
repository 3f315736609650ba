import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LineCounter, parseDocument } from 'yaml';
import {
  AZURE_AUTH_KINDS,
  EMBEDDING_PROVIDERS,
  MODEL_KINDS,
  PROVIDERS,
  QUALITY_TIERS,
  type AwsCredentialsSource,
  type AzureCredentialSource,
  type Capabilities,
  type Catalog,
  type CatalogDeployment,
  type CatalogModel,
  type EmbeddingShape,
  type ModelKind,
  type Provider,
  type QualityTier,
  type Simulation,
  type Upstream,
} from './model.js';
import { usdPerMtokToMicro, type Pricing } from './pricing.js';

/** Thrown when the catalog file is invalid; the message says exactly what and where. */
export class CatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CatalogError';
  }
}

/** The default catalog shipped with the gateway (the package ships catalog.yaml beside dist/). */
export const DEFAULT_CATALOG_PATH: string = fileURLToPath(new URL('../catalog.yaml', import.meta.url));

/** The model id that asks the router to choose; no catalog model may take it. */
export const AUTO_MODEL_ID = 'auto';

/** What a simulated model does when its catalog entry says nothing. */
export const DEFAULT_SIMULATION: Readonly<Simulation> = Object.freeze({ time_to_first_token_ms: 20, tokens_per_second: 0 });

const TOP_LEVEL_FIELDS = ['models'];
const NO_CAPABILITIES: Readonly<Capabilities> = Object.freeze({ tools: false, vision: false, streaming: false, json_mode: false });
const MODEL_FIELDS = [
  'id',
  'provider',
  'owned_by',
  'created',
  'upstream',
  'pricing',
  'context_window',
  'max_output_tokens',
  'capabilities',
  'quality_tier',
  'fallbacks',
  'simulation',
  'deployments',
  'kind',
  'embedding',
];
/** Chat fields an embedding model has no use for: stating one is a mistake, not a no-op. */
const CHAT_ONLY_FIELDS = ['max_output_tokens', 'capabilities', 'quality_tier', 'fallbacks'] as const;
const EMBEDDING_FIELDS = ['dimensions', 'shortenable', 'batch_size'];
const UPSTREAM_FIELDS = [
  'model',
  'base_url',
  'api_key_env',
  'headers',
  'deployment',
  'api_version',
  'auth',
  'region',
  'project',
  'aws_credentials',
  'azure_credential',
];
/** The upstream fields only Azure OpenAI reads. */
const AZURE_FIELDS = ['deployment', 'api_version', 'auth', 'azure_credential'] as const;
const AWS_CREDENTIALS_FIELDS = ['role_arn', 'external_id', 'session_name', 'profile', 'access_key_id_env', 'secret_access_key_env', 'session_token_env'];
/** Fields that would put an AWS secret in the catalog: refused with the field to use instead. */
const AWS_SECRET_FIELDS: Readonly<Record<string, string>> = {
  access_key_id: 'access_key_id_env',
  secret_access_key: 'secret_access_key_env',
  session_token: 'session_token_env',
};
const AZURE_CREDENTIAL_FIELDS = ['client_id', 'tenant_id', 'client_secret_env'];
/** An IAM role ARN, in any partition (`arn:aws:iam::123456789012:role/path/name`, `arn:aws-us-gov:...`). */
const IAM_ROLE_ARN = /^arn:aws(?:-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
/** STS's RoleSessionName: 2 to 64 of letters, digits and `+=,.@-_`. */
const ROLE_SESSION_NAME = /^[\w+=,.@-]{2,64}$/;
/** STS's ExternalId: 2 to 1224 of letters, digits and `+=,.@:/-_`. */
const EXTERNAL_ID = /^[\w+=,.@:/-]{2,1224}$/;
/** A profile name of the shared AWS files. */
const AWS_PROFILE_NAME = /^[\w.@+-]{1,64}$/;
/** An Entra ID client or tenant id: a GUID (a tenant may be named by its domain instead). */
const ENTRA_GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const ENTRA_TENANT = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[a-z0-9-]+(?:\.[a-z0-9-]+)+)$/;
/** A deployment may also name its own provider and prices. */
const DEPLOYMENT_FIELDS = [...UPSTREAM_FIELDS, 'provider', 'pricing'];
/** Azure's `api-version`: a dated version (`2024-10-21`, `2025-04-01-preview`), or `preview` / `latest` of the v1 routes. */
const AZURE_API_VERSION = /^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|preview|latest)$/;
/** An Azure deployment name: letters, digits, `-`, `_` and `.` (it becomes a URL path segment). */
const AZURE_DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** An AWS region name (`us-east-1`, `eu-central-2`, `us-gov-west-1`). */
const AWS_REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;
/** The providers that reach Google Vertex AI: their upstream names a project and a region. */
const VERTEX_PROVIDERS: readonly Provider[] = ['vertex', 'vertex-anthropic'];
/** The providers whose upstream names a region: Bedrock (an AWS region) and Vertex AI (a location). */
const REGIONAL_PROVIDERS: readonly Provider[] = ['bedrock', ...VERTEX_PROVIDERS];
/** A Google Cloud project id: 6 to 30 lowercase letters, digits and hyphens, starting with a letter. */
const GOOGLE_PROJECT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
/** A Vertex AI location: a region (`us-central1`, `europe-west4`) or `global`. */
const VERTEX_REGION = /^(?:global|[a-z]+-[a-z]+[0-9]+)$/;

/** The Bedrock runtime endpoint of a region. */
export function bedrockRuntimeUrl(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com`;
}
const PRICING_FIELDS = ['input', 'cached_input', 'cache_write', 'cache_write_1h', 'output'];
const CAPABILITY_FIELDS = ['tools', 'vision', 'streaming', 'json_mode'] as const;
const SIMULATION_FIELDS = ['time_to_first_token_ms', 'tokens_per_second'];
/** Environment variable names as the house style spells them. */
const ENV_VAR_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

type Fields = Record<string, unknown>;

/** How a bad value reads in an error: strings quoted, structures as JSON, absence as "nothing". */
function describe(value: unknown): string {
  if (value === undefined || value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return JSON.stringify(value);
}

function isMapping(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates one model; `fail` throws with the file and model prefix, so every message names the
 * file, the model (index and id) and the field.
 */
class ModelReader {
  /** The model produces no output tokens (an embedding model): pricing.output may be absent. */
  outputFree = false;

  constructor(readonly fail: (message: string) => never) {}

  rejectUnknown(fields: Fields, known: readonly string[], path: string): void {
    for (const name of Object.keys(fields)) {
      if (!known.includes(name)) this.fail(`unknown field "${path}${name}" (known: ${known.join(', ')})`);
    }
  }

  mapping(value: unknown, field: string): Fields {
    if (!isMapping(value)) this.fail(`${field} must be a mapping, got ${describe(value)}`);
    return value;
  }

  text(value: unknown, field: string): string {
    if (typeof value !== 'string' || value.trim() === '') this.fail(`${field} must be a non-empty string, got ${describe(value)}`);
    return value;
  }

  oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value))
      this.fail(`${field} must be one of ${allowed.join(', ')}, got ${describe(value)}`);
    return value as T;
  }

  integer(value: unknown, field: string, minimum: number, what: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) this.fail(`${field} must be ${what}, got ${describe(value)}`);
    return value;
  }

  price(value: unknown, field: string): number {
    if (typeof value === 'string' || typeof value === 'number') {
      try {
        return usdPerMtokToMicro(value);
      } catch {
        // Reported below with the field's name.
      }
    }
    this.fail(`${field} must be a price in USD per million tokens with at most 6 decimals, got ${describe(value)}`);
  }

  /**
   * The region of a bedrock upstream (required, an AWS region) or of a Vertex one (required, a
   * Vertex AI location); a region on any other provider's upstream fails.
   */
  region(value: unknown, provider: Provider, field: string): string | undefined {
    if (!REGIONAL_PROVIDERS.includes(provider)) {
      if (value !== undefined) this.fail(`${field} is only for providers ${REGIONAL_PROVIDERS.join(', ')}`);
      return undefined;
    }
    if (provider === 'bedrock') {
      if (typeof value !== 'string' || !AWS_REGION.test(value)) this.fail(`${field} must be an AWS region such as "us-east-1", got ${describe(value)}`);
      return value;
    }
    if (typeof value !== 'string' || !VERTEX_REGION.test(value))
      this.fail(`${field} must be a Vertex AI location such as us-central1 or global, got ${describe(value)}`);
    return value;
  }

  upstream(value: unknown, provider: Provider): Upstream {
    const fields = this.mapping(value, 'upstream');
    this.rejectUnknown(fields, UPSTREAM_FIELDS, 'upstream.');
    const upstream: Upstream = { model: this.text(fields.model, 'upstream.model') };
    const project = this.project(fields.project, provider, 'upstream.project');
    if (project !== undefined) upstream.project = project;
    const region = this.region(fields.region, provider, 'upstream.region');
    if (region !== undefined) upstream.region = region;
    if (region !== undefined && fields.base_url === undefined) upstream.base_url = regionalBaseUrl(provider, region);
    else if (provider !== 'simulated' || fields.base_url !== undefined) {
      const baseUrl = fields.base_url;
      if (typeof baseUrl !== 'string' || !isHttpUrl(baseUrl)) this.fail(`upstream.base_url must be an http(s) URL, got ${describe(baseUrl)}`);
      upstream.base_url = baseUrl;
    }
    // A bedrock model without a key signs with AWS's credential chain; an Azure one naming its
    // Entra ID application (azure_credential) needs no variable to be on.
    const keyless = provider === 'simulated' || provider === 'bedrock' || (provider === 'azure' && fields.azure_credential !== undefined);
    if (!keyless || fields.api_key_env !== undefined) {
      const keyVariable = fields.api_key_env;
      if (typeof keyVariable !== 'string' || !ENV_VAR_NAME.test(keyVariable))
        this.fail(`upstream.api_key_env must be an environment variable name in SCREAMING_SNAKE_CASE, got ${describe(keyVariable)}`);
      upstream.api_key_env = keyVariable;
    }
    if (fields.headers !== undefined) {
      const headers = this.mapping(fields.headers, 'upstream.headers');
      for (const [name, headerValue] of Object.entries(headers)) {
        if (typeof headerValue !== 'string') this.fail(`upstream.headers.${name} must be a string, got ${describe(headerValue)}`);
      }
      upstream.headers = Object.freeze({ ...(headers as Record<string, string>) });
    }
    this.azureFields(fields, provider, 'upstream', upstream);
    const aws = this.awsCredentials(fields.aws_credentials, provider, 'upstream');
    if (aws !== undefined) upstream.aws_credentials = aws;
    this.oneAuth(upstream, 'upstream');
    return Object.freeze(upstream);
  }

  /**
   * Reads Azure OpenAI's fields (deployment, api_version, auth) into `upstream`: refused on another
   * provider, where they would silently mean nothing. `inherited` gives a deployment the values of
   * `upstream` it does not set.
   */
  azureFields(fields: Fields, provider: Provider, path: string, upstream: Upstream, inherited?: Upstream): void {
    if (provider !== 'azure') {
      for (const name of AZURE_FIELDS) if (fields[name] !== undefined) this.fail(`${path}.${name} is only for provider azure`);
      return;
    }
    const deployment = fields.deployment ?? inherited?.deployment;
    if (deployment !== undefined) {
      if (typeof deployment !== 'string' || !AZURE_DEPLOYMENT_NAME.test(deployment))
        this.fail(`${path}.deployment must be an Azure deployment name (letters, digits, ".", "_", "-"), got ${describe(deployment)}`);
      upstream.deployment = deployment;
    }
    const apiVersion = fields.api_version ?? inherited?.api_version;
    if (apiVersion !== undefined) {
      if (typeof apiVersion !== 'string' || !AZURE_API_VERSION.test(apiVersion))
        this.fail(`${path}.api_version must be an Azure api-version such as "2024-10-21", "2025-04-01-preview" or "preview", got ${describe(apiVersion)}`);
      upstream.api_version = apiVersion;
    }
    // The deployment-addressed routes refuse a request without api-version; the v1 routes take none.
    if (upstream.deployment !== undefined && upstream.api_version === undefined)
      this.fail(`${path}.api_version is required with ${path}.deployment (Azure refuses a deployment URL without api-version)`);
    const auth = fields.auth ?? inherited?.auth;
    if (auth !== undefined) upstream.auth = this.oneOf(auth, `${path}.auth`, AZURE_AUTH_KINDS);
    // A deployment naming a key of its own does not take upstream's Entra ID application.
    const credential =
      fields.azure_credential !== undefined
        ? this.azureCredential(fields.azure_credential, `${path}.azure_credential`)
        : fields.api_key_env === undefined
          ? inherited?.azure_credential
          : undefined;
    if (credential !== undefined) {
      if (upstream.auth !== 'entra_id') this.fail(`${path}.azure_credential is only for ${path}.auth entra_id (an API key is not an Entra ID application)`);
      upstream.azure_credential = credential;
    }
  }

  /** An Azure upstream's Entra ID application: its client id, its tenant, the variable of its secret. */
  azureCredential(value: unknown, path: string): AzureCredentialSource {
    const fields = this.mapping(value, path);
    if (fields.client_secret !== undefined)
      this.fail(`${path}.client_secret must not be in the catalog: name the variable that holds it with ${path}.client_secret_env`);
    this.rejectUnknown(fields, AZURE_CREDENTIAL_FIELDS, `${path}.`);
    const clientId = fields.client_id;
    if (typeof clientId !== 'string' || !ENTRA_GUID.test(clientId)) this.fail(`${path}.client_id must be a client id (a GUID), got ${describe(clientId)}`);
    const credential: AzureCredentialSource = { client_id: clientId };
    if (fields.tenant_id !== undefined) {
      if (typeof fields.tenant_id !== 'string' || !ENTRA_TENANT.test(fields.tenant_id))
        this.fail(`${path}.tenant_id must be a tenant id (a GUID) or domain, got ${describe(fields.tenant_id)}`);
      credential.tenant_id = fields.tenant_id;
    }
    if (fields.client_secret_env !== undefined) {
      credential.client_secret_env = this.variable(fields.client_secret_env, `${path}.client_secret_env`);
      if (credential.tenant_id === undefined) this.fail(`${path}.tenant_id is required with ${path}.client_secret_env (a secret is its tenant's)`);
    }
    return Object.freeze(credential);
  }

  /**
   * A bedrock upstream's AWS identity: a role to assume, over a profile, keys in named variables or
   * the default chain. Never a key itself: those fields fail with the field to use instead.
   */
  awsCredentials(value: unknown, provider: Provider, path: string): AwsCredentialsSource | undefined {
    if (value === undefined) return undefined;
    const field = `${path}.aws_credentials`;
    if (provider !== 'bedrock') this.fail(`${field} is only for provider bedrock`);
    const fields = this.mapping(value, field);
    for (const [name, instead] of Object.entries(AWS_SECRET_FIELDS)) {
      if (fields[name] !== undefined) this.fail(`${field}.${name} must not be in the catalog: name the variable that holds it with ${field}.${instead}`);
    }
    this.rejectUnknown(fields, AWS_CREDENTIALS_FIELDS, `${field}.`);
    const source: AwsCredentialsSource = {};
    if (fields.role_arn !== undefined) {
      if (typeof fields.role_arn !== 'string' || !IAM_ROLE_ARN.test(fields.role_arn))
        this.fail(`${field}.role_arn must be an IAM role ARN such as "arn:aws:iam::123456789012:role/bedrock", got ${describe(fields.role_arn)}`);
      source.role_arn = fields.role_arn;
    }
    for (const [name, pattern, what] of [
      ['external_id', EXTERNAL_ID, '2 to 1224 letters, digits or +=,.@:/-_'],
      ['session_name', ROLE_SESSION_NAME, '2 to 64 letters, digits or +=,.@-_'],
    ] as const) {
      const text = fields[name];
      if (text === undefined) continue;
      if (source.role_arn === undefined) this.fail(`${field}.${name} is only with ${field}.role_arn`);
      if (typeof text !== 'string' || !pattern.test(text)) this.fail(`${field}.${name} must be ${what}, got ${describe(text)}`);
      source[name] = text;
    }
    if (fields.profile !== undefined) {
      if (typeof fields.profile !== 'string' || !AWS_PROFILE_NAME.test(fields.profile))
        this.fail(`${field}.profile must be a profile name of the shared AWS config, got ${describe(fields.profile)}`);
      source.profile = fields.profile;
    }
    const keys = ['access_key_id_env', 'secret_access_key_env', 'session_token_env'] as const;
    for (const name of keys) if (fields[name] !== undefined) source[name] = this.variable(fields[name], `${field}.${name}`);
    const namesKeys = keys.some((name) => source[name] !== undefined);
    if (namesKeys && (source.access_key_id_env === undefined || source.secret_access_key_env === undefined))
      this.fail(`${field}.access_key_id_env and ${field}.secret_access_key_env go together (a key is its id and its secret)`);
    if (namesKeys && source.profile !== undefined)
      this.fail(`${field}.profile and ${field}.access_key_id_env exclude each other (the credentials come from one source)`);
    return Object.freeze(source);
  }

  /** An environment variable's name. */
  variable(value: unknown, field: string): string {
    if (typeof value !== 'string' || !ENV_VAR_NAME.test(value))
      this.fail(`${field} must be an environment variable name in SCREAMING_SNAKE_CASE, got ${describe(value)}`);
    return value;
  }

  /** An upstream authenticates one way: a key variable, or a cloud identity of its own. */
  oneAuth(upstream: Upstream, path: string): void {
    if (upstream.api_key_env === undefined) return;
    if (upstream.aws_credentials !== undefined)
      this.fail(`${path}.aws_credentials and ${path}.api_key_env exclude each other (a Bedrock API key is sent as it is, not signed)`);
    if (upstream.azure_credential !== undefined)
      this.fail(`${path}.azure_credential and ${path}.api_key_env exclude each other (the application is named by azure_credential.client_id)`);
  }

  /**
   * More deployments of a real provider's model: each a mapping with the upstream fields, its own
   * base_url required (a bedrock or Vertex deployment naming its region defaults to that region's
   * endpoint), the rest
   * inherited from `upstream`. Two deployments at the same base_url and model would be one
   * deployment counted twice, so that fails.
   */
  deployments(value: unknown, provider: Provider, upstream: Upstream): CatalogDeployment[] | undefined {
    if (value === undefined) return undefined;
    if (provider === 'simulated') this.fail('deployments is only for real providers (a simulated model runs in the executor)');
    if (!Array.isArray(value) || value.length === 0) this.fail(`deployments must be a non-empty list of upstream mappings, got ${describe(value)}`);
    const seen = new Set([deploymentKey(upstream)]);
    const deployments = value.map((entry: unknown, index): CatalogDeployment => {
      const path = `deployments[${index}]`;
      const fields = this.mapping(entry, path);
      this.rejectUnknown(fields, DEPLOYMENT_FIELDS, `${path}.`);
      // Another provider's deployment inherits nothing of upstream's provider-specific fields: its
      // key, headers, project, region and prices are another account's.
      const ownProvider = fields.provider === undefined ? provider : this.oneOf(fields.provider, `${path}.provider`, PROVIDERS);
      const otherProvider = ownProvider !== provider;
      const inherited = otherProvider ? undefined : upstream;
      const project = this.project(fields.project ?? inherited?.project, ownProvider, `${path}.project`);
      const region = this.region(fields.region ?? inherited?.region, ownProvider, `${path}.region`);
      // A deployment naming its region (Bedrock's, Vertex AI's) is reached at that region's endpoint.
      const baseUrl = fields.base_url ?? (fields.region !== undefined && region !== undefined ? regionalBaseUrl(ownProvider, region) : undefined);
      if (typeof baseUrl !== 'string' || !isHttpUrl(baseUrl)) this.fail(`${path}.base_url must be an http(s) URL, got ${describe(baseUrl)}`);
      const deployment: CatalogDeployment = {
        model: fields.model === undefined ? upstream.model : this.text(fields.model, `${path}.model`),
        base_url: baseUrl,
      };
      if (project !== undefined) deployment.project = project;
      if (region !== undefined) deployment.region = region;
      if (otherProvider) {
        if (ownProvider === 'simulated') this.fail(`${path}.provider must be a real provider (a simulated model runs in the executor)`);
        // A bedrock deployment without a key signs with AWS's credential chain, as a bedrock model does.
        if (fields.api_key_env === undefined && ownProvider !== 'bedrock' && !(ownProvider === 'azure' && fields.azure_credential !== undefined))
          this.fail(`${path}.api_key_env is required for a deployment of another provider (${ownProvider}), whose key is its own`);
        if (fields.pricing === undefined)
          this.fail(`${path}.pricing is required for a deployment of another provider (${ownProvider}), which bills its own prices`);
        deployment.provider = ownProvider;
      }
      if (fields.pricing !== undefined) {
        if (!otherProvider) this.fail(`${path}.pricing is only for a deployment of another provider (one provider bills a model at one price)`);
        deployment.pricing = this.pricing(fields.pricing, `${path}.pricing`);
      }
      // A deployment naming a cloud identity of its own takes none of upstream's auth.
      const ownIdentity = fields.aws_credentials !== undefined || fields.azure_credential !== undefined;
      const keyVariable = fields.api_key_env ?? (ownIdentity ? undefined : inherited?.api_key_env);
      if (keyVariable !== undefined) {
        if (typeof keyVariable !== 'string' || !ENV_VAR_NAME.test(keyVariable))
          this.fail(`${path}.api_key_env must be an environment variable name in SCREAMING_SNAKE_CASE, got ${describe(keyVariable)}`);
        deployment.api_key_env = keyVariable;
      }
      const headers = fields.headers === undefined ? (otherProvider ? undefined : upstream.headers) : this.mapping(fields.headers, `${path}.headers`);
      if (headers !== undefined) {
        for (const [name, headerValue] of Object.entries(headers)) {
          if (typeof headerValue !== 'string') this.fail(`${path}.headers.${name} must be a string, got ${describe(headerValue)}`);
        }
        deployment.headers = Object.freeze({ ...(headers as Record<string, string>) });
      }
      this.azureFields(fields, ownProvider, path, deployment, inherited);
      const aws =
        fields.aws_credentials !== undefined
          ? this.awsCredentials(fields.aws_credentials, ownProvider, path)
          : fields.api_key_env === undefined
            ? inherited?.aws_credentials
            : undefined;
      if (aws !== undefined) deployment.aws_credentials = aws;
      this.oneAuth(deployment, path);
      const key = deploymentKey(deployment);
      if (seen.has(key)) this.fail(`${path} must differ from upstream and the other deployments in base_url, model or credentials`);
      seen.add(key);
      return Object.freeze(deployment);
    });
    // Usage records name the provider that answered, and metering prices by it: one provider, one price.
    const priced = new Map<string, number>();
    deployments.forEach((deployment, index) => {
      if (!deployment.provider || !deployment.pricing) return;
      const first = priced.get(deployment.provider);
      if (first === undefined) priced.set(deployment.provider, index);
      else if (JSON.stringify(deployments[first]?.pricing) !== JSON.stringify(deployment.pricing))
        this.fail(`deployments[${index}].pricing must equal deployments[${first}].pricing (one provider bills a model at one price)`);
    });
    return deployments;
  }

  /** A Vertex upstream's Google Cloud project (required); a project on any other provider's upstream fails. */
  project(value: unknown, provider: Provider, field: string): string | undefined {
    if (!VERTEX_PROVIDERS.includes(provider)) {
      if (value !== undefined) this.fail(`${field} is only for providers ${VERTEX_PROVIDERS.join(', ')}`);
      return undefined;
    }
    if (typeof value !== 'string' || !GOOGLE_PROJECT_ID.test(value))
      this.fail(`${field} must be a Google Cloud project id (6 to 30 lowercase letters, digits and hyphens), got ${describe(value)}`);
    return value;
  }

  /** An embedding model's shape; `embedding` is required of embedding models and refused of the others. */
  embedding(value: unknown, kind: ModelKind, provider: Provider): EmbeddingShape | undefined {
    if (kind !== 'embedding') {
      if (value !== undefined) this.fail('embedding is only for models of kind embedding');
      return undefined;
    }
    if (!EMBEDDING_PROVIDERS.includes(provider))
      this.fail(`kind embedding is not served by the ${provider} provider (embedding providers: ${EMBEDDING_PROVIDERS.join(', ')})`);
    const fields = this.mapping(value, 'embedding');
    this.rejectUnknown(fields, EMBEDDING_FIELDS, 'embedding.');
    const shortenable = fields.shortenable ?? false;
    if (typeof shortenable !== 'boolean') this.fail(`embedding.shortenable must be true or false, got ${describe(shortenable)}`);
    return Object.freeze({
      dimensions: this.integer(fields.dimensions, 'embedding.dimensions', 1, 'a positive integer'),
      shortenable,
      ...(fields.batch_size === undefined ? {} : { batch_size: this.integer(fields.batch_size, 'embedding.batch_size', 1, 'a positive integer') }),
    });
  }

  pricing(value: unknown, path = 'pricing'): Pricing {
    const fields = this.mapping(value, path);
    this.rejectUnknown(fields, PRICING_FIELDS, `${path}.`);
    const input = this.price(fields.input, `${path}.input`);
    // Providers without a prompt cache bill cached tokens like any other input token.
    const cachedInput = fields.cached_input === undefined ? input : this.price(fields.cached_input, `${path}.cached_input`);
    // Cache writes cost what plain input costs unless the catalog states their rate (Anthropic's
    // are 1.25x and 2x the input price); one-hour writes default to the five-minute rate.
    const cacheWrite = fields.cache_write === undefined ? input : this.price(fields.cache_write, `${path}.cache_write`);
    const cacheWrite1h = fields.cache_write_1h === undefined ? cacheWrite : this.price(fields.cache_write_1h, `${path}.cache_write_1h`);
    // An embedding model produces no output tokens: its catalog entry may leave the price out.
    const output = fields.output === undefined && this.outputFree ? 0 : this.price(fields.output, `${path}.output`);
    return Object.freeze({
      input_micro_usd_per_mtok: input,
      cached_input_micro_usd_per_mtok: cachedInput,
      output_micro_usd_per_mtok: output,
      cache_write_micro_usd_per_mtok: cacheWrite,
      cache_write_1h_micro_usd_per_mtok: cacheWrite1h,
    });
  }

  capabilities(value: unknown): Capabilities {
    const fields = this.mapping(value, 'capabilities');
    this.rejectUnknown(fields, CAPABILITY_FIELDS, 'capabilities.');
    const capabilities = {} as Capabilities;
    // Every capability is stated: a forgotten one must not silently read as false.
    for (const name of CAPABILITY_FIELDS) {
      const flag = fields[name];
      if (typeof flag !== 'boolean') this.fail(`capabilities.${name} must be true or false, got ${describe(flag)}`);
      capabilities[name] = flag;
    }
    return Object.freeze(capabilities);
  }

  fallbacks(value: unknown): string[] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) this.fail(`fallbacks must be a list of model ids, got ${describe(value)}`);
    return value.map((entry, index) => this.text(entry, `fallbacks[${index}]`));
  }

  simulation(value: unknown, provider: Provider): Simulation | undefined {
    if (provider !== 'simulated') {
      if (value !== undefined) this.fail('simulation is only for provider simulated');
      return undefined;
    }
    if (value === undefined) return DEFAULT_SIMULATION;
    const fields = this.mapping(value, 'simulation');
    this.rejectUnknown(fields, SIMULATION_FIELDS, 'simulation.');
    const timeToFirstToken =
      fields.time_to_first_token_ms === undefined
        ? DEFAULT_SIMULATION.time_to_first_token_ms
        : this.integer(fields.time_to_first_token_ms, 'simulation.time_to_first_token_ms', 0, 'a non-negative integer');
    const tokensPerSecond = fields.tokens_per_second ?? DEFAULT_SIMULATION.tokens_per_second;
    if (typeof tokensPerSecond !== 'number' || !Number.isFinite(tokensPerSecond) || tokensPerSecond < 0) {
      this.fail(`simulation.tokens_per_second must be a non-negative number (0: as fast as possible), got ${describe(tokensPerSecond)}`);
    }
    return Object.freeze({ time_to_first_token_ms: timeToFirstToken, tokens_per_second: tokensPerSecond });
  }
}

/** The Vertex AI endpoint of a location: regional, or the global one. */
function vertexBaseUrl(region: string): string {
  return region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;
}

/** The endpoint of a regional provider's region: Bedrock's runtime or Vertex AI's. */
function regionalBaseUrl(provider: Provider, region: string): string {
  return provider === 'bedrock' ? bedrockRuntimeUrl(region) : vertexBaseUrl(region);
}

/**
 * What tells deployments apart: base URL and model, Azure's deployment name or Vertex's project and
 * region, and the identity it is reached as (two AWS accounts serve one model at one endpoint).
 */
function deploymentKey(upstream: Upstream): string {
  const deployment = upstream.deployment === undefined ? '' : ` ${upstream.deployment}`;
  const location = upstream.project === undefined ? '' : ` ${upstream.project} ${upstream.region}`;
  const identity = JSON.stringify([upstream.api_key_env ?? null, upstream.aws_credentials ?? null, upstream.azure_credential ?? null]);
  return `${upstream.base_url} ${upstream.model}${deployment}${location} ${identity}`;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * Parses and validates catalog text (YAML, or JSON, which is YAML too). `source` names the file
 * in error messages. Anything unexpected fails with one CatalogError naming the file, the model
 * (`models[2] (gpt-4o)`) and the field; unknown fields fail too, so that a typo never passes as
 * an absent optional field.
 */
export function parseCatalog(text: string, source: string): Catalog {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const syntaxError = document.errors[0];
  if (syntaxError) {
    const { line, col } = lineCounter.linePos(syntaxError.pos[0]);
    throw new CatalogError(`${source}: not valid YAML or JSON at line ${line}, column ${col}: ${syntaxError.message}`);
  }
  const root: unknown = document.toJS();
  if (!isMapping(root)) throw new CatalogError(`${source}: must be a mapping with a models list, got ${describe(root)}`);
  for (const name of Object.keys(root)) {
    if (!TOP_LEVEL_FIELDS.includes(name)) throw new CatalogError(`${source}: unknown field "${name}" (known: ${TOP_LEVEL_FIELDS.join(', ')})`);
  }
  const entries = root.models;
  if (!Array.isArray(entries) || entries.length === 0) throw new CatalogError(`${source}: models must be a non-empty list of models, got ${describe(entries)}`);

  const models: CatalogModel[] = [];
  const indexById = new Map<string, number>();
  entries.forEach((entry: unknown, index) => {
    const id = isMapping(entry) && typeof entry.id === 'string' && entry.id.trim() !== '' ? entry.id : undefined;
    const prefix = `${source}: models[${index}]${id === undefined ? '' : ` (${id})`}`;
    const reader = new ModelReader((message) => {
      throw new CatalogError(`${prefix}: ${message}`);
    });
    const fields = reader.mapping(entry, 'each model');
    reader.rejectUnknown(fields, MODEL_FIELDS, '');
    const modelId = reader.text(fields.id, 'id');
    if (modelId === AUTO_MODEL_ID) reader.fail(`id "${AUTO_MODEL_ID}" is reserved for automatic routing`);
    const firstIndex = indexById.get(modelId);
    if (firstIndex !== undefined) throw new CatalogError(`${prefix}: id must be unique, already used by models[${firstIndex}]`);
    indexById.set(modelId, index);
    const provider = reader.oneOf(fields.provider, 'provider', PROVIDERS);
    const kind = fields.kind === undefined ? 'chat' : reader.oneOf(fields.kind, 'kind', MODEL_KINDS);
    const embedding = reader.embedding(fields.embedding, kind, provider);
    if (embedding) {
      for (const name of CHAT_ONLY_FIELDS) if (fields[name] !== undefined) reader.fail(`${name} is not for models of kind embedding`);
      reader.outputFree = true;
    }
    const contextWindow = reader.integer(fields.context_window, 'context_window', 1, 'a positive integer');
    const maxOutputTokens = embedding ? 0 : reader.integer(fields.max_output_tokens, 'max_output_tokens', 1, 'a positive integer');
    if (maxOutputTokens > contextWindow) reader.fail(`max_output_tokens must be at most context_window (${contextWindow}), got ${maxOutputTokens}`);
    const simulation = reader.simulation(fields.simulation, provider);
    const upstream = reader.upstream(fields.upstream, provider);
    const deployments = reader.deployments(fields.deployments, provider, upstream);
    const model: CatalogModel = {
      id: modelId,
      provider,
      ...(kind === 'embedding' ? { kind } : {}),
      owned_by: reader.text(fields.owned_by, 'owned_by'),
      created: reader.integer(fields.created, 'created', 0, 'unix seconds (a non-negative integer)'),
      upstream,
      pricing: reader.pricing(fields.pricing),
      context_window: contextWindow,
      max_output_tokens: maxOutputTokens,
      // An embedding model can do none of a chat model's things; `auto` never picks it.
      capabilities: embedding ? NO_CAPABILITIES : reader.capabilities(fields.capabilities),
      quality_tier: embedding ? 'economy' : reader.oneOf<QualityTier>(fields.quality_tier, 'quality_tier', QUALITY_TIERS),
      fallbacks: Object.freeze(embedding ? [] : reader.fallbacks(fields.fallbacks)),
      ...(simulation === undefined ? {} : { simulation }),
      ...(deployments === undefined ? {} : { deployments: Object.freeze(deployments) }),
      ...(embedding === undefined ? {} : { embedding }),
    };
    models.push(model);
  });

  // Fallbacks name other models, so they are checked once every id is known.
  models.forEach((model, index) => {
    model.fallbacks.forEach((fallback, position) => {
      const fail = (message: string): never => {
        throw new CatalogError(`${source}: models[${index}] (${model.id}): fallbacks[${position}] ${message}`);
      };
      if (fallback === model.id) fail('must not be the model itself');
      if (!indexById.has(fallback)) fail(`must be the id of a model in this catalog, got ${describe(fallback)}`);
    });
  });

  const frozen = Object.freeze(models.map((model) => Object.freeze(model)));
  return Object.freeze({ models: frozen, byId: new Map(frozen.map((model) => [model.id, model])) });
}

/** Reads and validates a catalog file; errors name the path as given. */
export function loadCatalog(path: string = DEFAULT_CATALOG_PATH): Catalog {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CatalogError(`${path}: cannot read the catalog: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  return parseCatalog(text, path);
}

/**
 * The models that are on: simulated ones always, bedrock ones that name no key (they sign with
 * AWS's credential chain or their aws_credentials, which only a request can try) always, Azure ones
 * naming their azure_credential always (so that the router, which holds no cloud identity, needs
 * none of its variables), others when their key variable is set and non-empty.
 */
export function enabledModels(catalog: Catalog, env: Record<string, string | undefined>): CatalogModel[] {
  return catalog.models.filter((model) => {
    const variable = model.upstream.api_key_env;
    if (variable === undefined)
      return model.provider === 'simulated' || model.provider === 'bedrock' || (model.provider === 'azure' && model.upstream.azure_credential !== undefined);
    return Boolean(env[variable]);
  });
}

/**
 * Every environment variable a catalog reads provider keys from (its models' and deployments'
 * api_key_env, and the key variables of their aws_credentials and azure_credential), sorted.
 */
export function keyVariables(catalog: Catalog): string[] {
  const names = new Set<string>();
  for (const model of catalog.models) {
    for (const upstream of [model.upstream, ...(model.deployments ?? [])]) {
      const { aws_credentials: aws, azure_credential: azure } = upstream;
      for (const name of [upstream.api_key_env, aws?.access_key_id_env, aws?.secret_access_key_env, aws?.session_token_env, azure?.client_secret_env])
        if (name) names.add(name);
    }
  }
  return [...names].sort();
}
