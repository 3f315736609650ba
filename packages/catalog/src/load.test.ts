import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, DEFAULT_CATALOG_PATH, enabledModels, keyVariables, loadCatalog, parseCatalog } from './load.js';
import { costPicoUsd, pricingOf, type Pricing } from './pricing.js';

const INVALID_FIXTURES = fileURLToPath(new URL('../test/fixtures/invalid/', import.meta.url));
const catalogFiles = readdirSync(INVALID_FIXTURES)
  .filter((name) => /\.(ya?ml|json)$/.test(name))
  .sort();

/**
 * The CatalogError `action` throws; the test fails when it throws nothing or something else. Here
 * rather than @gateway/testing's thrownBy: @gateway/testing depends on this package.
 */
function errorOf(action: () => unknown): CatalogError {
  let thrown: unknown;
  try {
    action();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(CatalogError);
  return thrown as CatalogError;
}

/** A Pricing from its prices in micro-USD per million tokens. */
function micro(prices: { input: number; cached: number; write: number; write1h: number; output: number }): Pricing {
  return {
    input_micro_usd_per_mtok: prices.input,
    cached_input_micro_usd_per_mtok: prices.cached,
    output_micro_usd_per_mtok: prices.output,
    cache_write_micro_usd_per_mtok: prices.write,
    cache_write_1h_micro_usd_per_mtok: prices.write1h,
  };
}

/** The Pricing of a catalog entry giving only input and output prices: cached input and cache writes cost the input price. */
function inputAndOutput(input: number, output: number): Pricing {
  return micro({ input, cached: input, write: input, write1h: input, output });
}

/**
 * A catalog in YAML of models on the clouds, each given by its id, provider, upstream and any
 * deployments (flow mappings); the fields every model needs, and these tests do not look at, are
 * the same for all.
 */
function cloudCatalog(...models: Array<{ id: string; provider: string; upstream: string; deployments?: string[] }>): string {
  const entries = models.map(
    ({ id, provider, upstream, deployments }) =>
      `  - { id: ${id}, provider: ${provider}, owned_by: vendor, created: 1, context_window: 1000, max_output_tokens: 100, quality_tier: standard,\n` +
      '      capabilities: { tools: true, vision: true, streaming: true, json_mode: true }, pricing: { input: "2.50", output: "10.00" },\n' +
      `      upstream: ${upstream}${deployments ? `, deployments: [${deployments.join(', ')}]` : ''} }`,
  );
  return ['models:', ...entries].join('\n');
}

describe('parseCatalog with invalid catalogs', () => {
  it('has a fixture for every case', () => {
    // Every fixture has its expected message and every expected message its fixture, no two
    // fixtures expect the same message, and every message load.ts can throw (each template of a
    // fail() or CatalogError(), its ${...} parts as wildcards) is expected by at least one fixture:
    // a new check without a fixture fails here. Reading a missing file is tested below.
    const expectedFiles = readdirSync(INVALID_FIXTURES)
      .filter((name) => name.endsWith('.error'))
      .sort();
    expect(expectedFiles).toEqual(catalogFiles.map((name) => name.replace(/\.(ya?ml|json)$/, '.error')).sort());
    const messages = expectedFiles.map((name) => readFileSync(join(INVALID_FIXTURES, name), 'utf8').trimEnd());
    expect(new Set(messages).size).toBe(messages.length);
    const source = readFileSync(fileURLToPath(new URL('./load.ts', import.meta.url)), 'utf8');
    const templates = [...source.matchAll(/(?:fail|CatalogError)\(\s*(`(?:[^`\\]|\\.)*`|'[^']*')/g)].map((match) => match[1]!.slice(1, -1));
    expect(templates.length).toBeGreaterThan(20);
    const uncovered = templates
      .filter((template) => !template.includes('cannot read the catalog'))
      .filter((template) => {
        const pattern = new RegExp(
          template
            .split(/\$\{(?:[^{}]|\{[^}]*\})*\}/)
            .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('[\\s\\S]*'),
        );
        return !messages.some((message) => pattern.test(message));
      });
    expect(uncovered).toEqual([]);
  });

  it.each(catalogFiles)('%s fails with its exact expected message', (name) => {
    const text = readFileSync(join(INVALID_FIXTURES, name), 'utf8');
    const expected = readFileSync(join(INVALID_FIXTURES, name.replace(/\.(ya?ml|json)$/, '.error')), 'utf8').trimEnd();
    expect(errorOf(() => parseCatalog(text, name)).message).toBe(expected);
  });
});

describe('parseCatalog with valid catalogs', () => {
  const minimal = `
models:
  - id: sim-a
    provider: simulated
    owned_by: gateway
    created: 1735689600
    upstream: { model: sim-a }
    pricing: { input: 2.5, output: "10" }
    context_window: 1000
    max_output_tokens: 1000
    capabilities: { tools: false, vision: false, streaming: true, json_mode: false }
    quality_tier: standard
  - id: vendor/model-b
    provider: anthropic
    owned_by: vendor
    created: 0
    upstream: { model: model-b-2025, base_url: "http://localhost:8080", api_key_env: VENDOR_KEY_2, headers: { x-version: "1" } }
    pricing: { input: "0.000001", cached_input: "0.5", cache_write: "1.25", output: "1.234567" }
    context_window: 2000
    max_output_tokens: 100
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium
    fallbacks: [sim-a]
`;
  /** The minimal catalog with these deployments (each a flow mapping) of vendor/model-b. */
  const withDeployments = (...deployments: string[]) =>
    minimal.replace(
      '    fallbacks: [sim-a]\n',
      `    fallbacks: [sim-a]\n    deployments:\n${deployments.map((deployment) => `      - ${deployment}\n`).join('')}`,
    );

  it('converts prices to integer micro-USD, defaulting cached input and cache writes to the input price', () => {
    const catalog = parseCatalog(minimal, 'minimal.yaml');
    expect(catalog.byId.get('sim-a')?.pricing).toEqual(inputAndOutput(2_500_000, 10_000_000));
  });

  it('defaults the one-hour cache-write price to the five-minute one', () => {
    const catalog = parseCatalog(minimal, 'minimal.yaml');
    expect(catalog.byId.get('vendor/model-b')?.pricing).toEqual(micro({ input: 1, cached: 500_000, write: 1_250_000, write1h: 1_250_000, output: 1_234_567 }));
  });

  it('keeps ids with slashes, upstream details and fallbacks, and gives simulated models default timings', () => {
    const catalog = parseCatalog(minimal, 'minimal.yaml');
    const model = catalog.byId.get('vendor/model-b');
    expect(model?.upstream).toEqual({ model: 'model-b-2025', base_url: 'http://localhost:8080', api_key_env: 'VENDOR_KEY_2', headers: { 'x-version': '1' } });
    expect(model?.fallbacks).toEqual(['sim-a']);
    expect(model?.simulation).toBeUndefined();
    expect(catalog.byId.get('sim-a')?.simulation).toEqual({ time_to_first_token_ms: 20, tokens_per_second: 0 });
    expect(catalog.models.map((entry) => entry.id)).toEqual(['sim-a', 'vendor/model-b']);
  });

  it('reads more deployments of a model, each inheriting the upstream fields it does not set', () => {
    const text = withDeployments(
      '{ base_url: "http://eu.example.com/v1" }',
      '{ base_url: "http://localhost:8080", model: model-b-eu, api_key_env: VENDOR_KEY_EU, headers: {} }',
    );
    const catalog = parseCatalog(text, 'deployments.yaml');
    expect(catalog.byId.get('vendor/model-b')?.deployments).toEqual([
      { model: 'model-b-2025', base_url: 'http://eu.example.com/v1', api_key_env: 'VENDOR_KEY_2', headers: { 'x-version': '1' } },
      { model: 'model-b-eu', base_url: 'http://localhost:8080', api_key_env: 'VENDOR_KEY_EU', headers: {} },
    ]);
    expect(catalog.byId.get('sim-a')).not.toHaveProperty('deployments');
  });

  /**
   * Deployments of vendor/model-b (an anthropic model) on other providers' clouds: the entries, what
   * each reads as (its prices aside: every entry of a row costs the row's), the key variables the
   * catalog then reads, and the changes of the text each refuses with the error after
   * `clouds.yaml: models[1] (vendor/model-b): deployments[0].`.
   */
  const otherProviders: Array<{
    title: string;
    provider: string;
    entries: string[];
    prices: [input: number, output: number];
    reads: Array<Record<string, unknown>>;
    keys: string[];
    refused: Array<[from: string, to: string, error: string]>;
  }> = [
    {
      title: 'reads deployments of other providers with their own key and prices, and prices each answer by the provider that served it',
      provider: 'azure',
      entries: [
        '{ provider: azure, base_url: "https://contoso.openai.azure.com", model: gpt-4o, deployment: gpt-4o-prod, api_version: "2024-10-21", api_key_env: AZURE_OPENAI_API_KEY, pricing: { input: "2.75", output: "11.00" } }',
        '{ provider: azure, base_url: "https://fabrikam.openai.azure.com", api_key_env: AZURE_OPENAI_API_KEY_2, auth: entra_id, pricing: { input: "2.75", output: "11.00" } }',
      ],
      prices: [2_750_000, 11_000_000],
      reads: [
        {
          provider: 'azure',
          model: 'gpt-4o',
          base_url: 'https://contoso.openai.azure.com',
          deployment: 'gpt-4o-prod',
          api_version: '2024-10-21',
          api_key_env: 'AZURE_OPENAI_API_KEY',
        },
        { provider: 'azure', model: 'model-b-2025', base_url: 'https://fabrikam.openai.azure.com', api_key_env: 'AZURE_OPENAI_API_KEY_2', auth: 'entra_id' },
      ],
      keys: ['AZURE_OPENAI_API_KEY', 'AZURE_OPENAI_API_KEY_2', 'VENDOR_KEY_2'],
      refused: [],
    },
    {
      title: "reads a bedrock deployment of another provider's model: its own region and endpoint, no key (AWS's credential chain) and its own prices",
      provider: 'bedrock',
      entries: ['{ provider: bedrock, model: "us.anthropic.claude-sonnet-4-20250514-v1:0", region: us-east-1, pricing: { input: "3.00", output: "15.00" } }'],
      prices: [3_000_000, 15_000_000],
      reads: [
        {
          provider: 'bedrock',
          model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
          region: 'us-east-1',
          base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com',
        },
      ],
      keys: ['VENDOR_KEY_2'],
      // Its region is checked as a bedrock model's is, and is refused on a deployment of another provider.
      refused: [
        ['region: us-east-1', 'region: us_east_1', 'region must be an AWS region such as "us-east-1", got "us_east_1"'],
        ['provider: bedrock, ', '', 'region is only for providers bedrock, vertex, vertex-anthropic'],
      ],
    },
    {
      title: "reads a Vertex deployment of another provider's model: its own project, region and endpoint, its credentials and its prices",
      provider: 'vertex-anthropic',
      entries: [
        '{ provider: vertex-anthropic, model: claude-sonnet-4@20250514, project: acme-prod-ml, region: us-east5, api_key_env: GOOGLE_VERTEX_CREDENTIALS, pricing: { input: "3.00", output: "15.00" } }',
      ],
      prices: [3_000_000, 15_000_000],
      reads: [
        {
          provider: 'vertex-anthropic',
          model: 'claude-sonnet-4@20250514',
          project: 'acme-prod-ml',
          region: 'us-east5',
          base_url: 'https://us-east5-aiplatform.googleapis.com',
          api_key_env: 'GOOGLE_VERTEX_CREDENTIALS',
        },
      ],
      keys: ['GOOGLE_VERTEX_CREDENTIALS', 'VENDOR_KEY_2'],
      // Its location is checked as a Vertex model's is; its credentials are its own.
      refused: [
        ['project: acme-prod-ml, ', '', 'project must be a Google Cloud project id (6 to 30 lowercase letters, digits and hyphens), got nothing'],
        ['region: us-east5', 'region: us-east-1', 'region must be a Vertex AI location such as us-central1 or global, got "us-east-1"'],
        [
          'api_key_env: GOOGLE_VERTEX_CREDENTIALS, ',
          '',
          'api_key_env is required for a deployment of another provider (vertex-anthropic), whose key is its own',
        ],
      ],
    },
  ];

  for (const {
    title,
    provider,
    entries,
    prices: [input, output],
    reads,
    keys,
    refused,
  } of otherProviders) {
    it(title, () => {
      const text = withDeployments(...entries);
      const catalog = parseCatalog(text, 'clouds.yaml');
      const model = catalog.byId.get('vendor/model-b')!;
      const pricing = inputAndOutput(input, output);
      // Another provider's deployment inherits neither the anthropic upstream's headers nor its key.
      expect(model.deployments).toEqual(reads.map((deployment) => ({ ...deployment, pricing })));
      expect(pricingOf(model, provider)).toEqual(pricing);
      expect(pricingOf(model, 'openai-compatible')).toBe(model.pricing);
      expect(keyVariables(catalog)).toEqual(keys);
      for (const [from, to, error] of refused) {
        expect(errorOf(() => parseCatalog(text.replace(from, to), 'clouds.yaml')).message).toBe(
          `clouds.yaml: models[1] (vendor/model-b): deployments[0].${error}`,
        );
      }
    });
  }

  it('reads an Azure OpenAI model on a deployment URL and one on the v1 routes', () => {
    const text = cloudCatalog(
      {
        id: 'azure/gpt-4o',
        provider: 'azure',
        upstream:
          '{ model: gpt-4o, base_url: "https://contoso.openai.azure.com", api_key_env: AZURE_OPENAI_API_KEY, deployment: gpt-4o-prod, api_version: "2025-04-01-preview" }',
      },
      {
        id: 'foundry/gpt-4o',
        provider: 'azure',
        upstream: '{ model: gpt-4o, base_url: "https://contoso.services.ai.azure.com", api_key_env: AZURE_CLIENT_ID, auth: entra_id }',
      },
    );
    const catalog = parseCatalog(text, 'azure.yaml');
    expect(catalog.byId.get('azure/gpt-4o')?.upstream).toEqual({
      model: 'gpt-4o',
      base_url: 'https://contoso.openai.azure.com',
      api_key_env: 'AZURE_OPENAI_API_KEY',
      deployment: 'gpt-4o-prod',
      api_version: '2025-04-01-preview',
    });
    expect(catalog.byId.get('foundry/gpt-4o')?.upstream).toEqual({
      model: 'gpt-4o',
      base_url: 'https://contoso.services.ai.azure.com',
      api_key_env: 'AZURE_CLIENT_ID',
      auth: 'entra_id',
    });
  });

  it("reads a bedrock model: its region, its region's runtime endpoint unless base_url says, and deployments in other regions", () => {
    const text = cloudCatalog({
      id: 'bedrock/claude',
      provider: 'bedrock',
      upstream: '{ model: "us.anthropic.claude-sonnet-4-20250514-v1:0", region: us-east-1 }',
      deployments: [
        '{ region: us-west-2 }',
        '{ base_url: "http://127.0.0.1:9000", model: "eu.anthropic.claude-sonnet-4-20250514-v1:0", region: eu-west-1, api_key_env: BEDROCK_EU_KEY }',
      ],
    });
    const model = parseCatalog(text, 'bedrock.yaml').byId.get('bedrock/claude');
    expect(model?.upstream).toEqual({
      model: 'us.anthropic.claude-sonnet-4-20250514-v1:0',
      region: 'us-east-1',
      base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    });
    expect(model?.deployments).toEqual([
      { model: 'us.anthropic.claude-sonnet-4-20250514-v1:0', region: 'us-west-2', base_url: 'https://bedrock-runtime.us-west-2.amazonaws.com' },
      { model: 'eu.anthropic.claude-sonnet-4-20250514-v1:0', region: 'eu-west-1', base_url: 'http://127.0.0.1:9000', api_key_env: 'BEDROCK_EU_KEY' },
    ]);
    // Without a key it signs with AWS's credential chain, which only a request can try: it is on.
    expect(enabledModels(parseCatalog(text, 'bedrock.yaml'), {}).map((entry) => entry.id)).toEqual(['bedrock/claude']);
    const keyed = parseCatalog(text.replace('region: us-east-1 }', 'region: us-east-1, api_key_env: AWS_BEARER_TOKEN_BEDROCK }'), 'bedrock.yaml');
    expect(enabledModels(keyed, {})).toEqual([]);
    expect(enabledModels(keyed, { AWS_BEARER_TOKEN_BEDROCK: 'bedrock-api-key' }).map((entry) => entry.id)).toEqual(['bedrock/claude']);
  });

  it("reads an AWS identity per bedrock deployment: two accounts may serve one model at one endpoint, and a deployment naming its own takes none of upstream's", () => {
    const role = 'arn:aws:iam::222233334444:role/bedrock-invoker';
    const text = cloudCatalog({
      id: 'bedrock/claude',
      provider: 'bedrock',
      upstream: `{ model: "us.anthropic.claude-sonnet-4-20250514-v1:0", region: us-east-1, aws_credentials: { role_arn: "${role}", external_id: acme-gateway } }`,
      deployments: [
        '{ region: us-east-1, aws_credentials: { access_key_id_env: BEDROCK_B_ACCESS_KEY_ID, secret_access_key_env: BEDROCK_B_SECRET_ACCESS_KEY } }',
        '{ region: us-east-1, aws_credentials: { profile: account-c } }',
        '{ region: us-west-2 }',
        '{ region: us-east-1, aws_credentials: {} }',
        '{ region: eu-west-1, api_key_env: BEDROCK_EU_KEY }',
      ],
    });
    const catalog = parseCatalog(text, 'accounts.yaml');
    const model = catalog.byId.get('bedrock/claude');
    expect(model?.upstream.aws_credentials).toEqual({ role_arn: role, external_id: 'acme-gateway' });
    expect(model?.deployments?.map((deployment) => [deployment.region, deployment.aws_credentials, deployment.api_key_env])).toEqual([
      ['us-east-1', { access_key_id_env: 'BEDROCK_B_ACCESS_KEY_ID', secret_access_key_env: 'BEDROCK_B_SECRET_ACCESS_KEY' }, undefined],
      ['us-east-1', { profile: 'account-c' }, undefined],
      // Inherited, as api_key_env and headers are.
      ['us-west-2', { role_arn: role, external_id: 'acme-gateway' }, undefined],
      // `{}`: AWS's default chain of the process, not upstream's role.
      ['us-east-1', {}, undefined],
      // A key of its own: a Bedrock API key, no role.
      ['eu-west-1', undefined, 'BEDROCK_EU_KEY'],
    ]);
    expect(keyVariables(catalog)).toEqual(['BEDROCK_B_ACCESS_KEY_ID', 'BEDROCK_B_SECRET_ACCESS_KEY', 'BEDROCK_EU_KEY']);
    // Only a request can try an AWS identity: the model is on, in the router too, with no variable set.
    expect(enabledModels(catalog, {}).map((entry) => entry.id)).toEqual(['bedrock/claude']);
    // The same identity twice at one endpoint is one deployment counted twice.
    expect(errorOf(() => parseCatalog(text.replace('aws_credentials: { profile: account-c }', 'aws_credentials: {}'), 'accounts.yaml')).message).toBe(
      'accounts.yaml: models[0] (bedrock/claude): deployments[3] must differ from upstream and the other deployments in base_url, model or credentials',
    );
  });

  it('reads an Entra ID application per Azure deployment, on with no variable set, so the router needs none', () => {
    const text = cloudCatalog({
      id: 'azure/gpt-4o',
      provider: 'azure',
      upstream:
        '{ model: gpt-4o, base_url: "https://contoso-east.openai.azure.com", auth: entra_id, azure_credential: { client_id: "3f1c6e2a-9b7d-4c1e-8a2f-5d6b7c8e9f01" } }',
      deployments: [
        '{ base_url: "https://fabrikam.openai.azure.com", azure_credential: { client_id: "9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", tenant_id: fabrikam.onmicrosoft.com, client_secret_env: FABRIKAM_AZURE_CLIENT_SECRET } }',
        '{ base_url: "https://contoso-west.openai.azure.com" }',
        '{ base_url: "https://contoso-key.openai.azure.com", auth: api_key, api_key_env: CONTOSO_AZURE_KEY }',
      ],
    });
    const catalog = parseCatalog(text, 'azure.yaml');
    const model = catalog.byId.get('azure/gpt-4o');
    expect(model?.upstream).toEqual({
      model: 'gpt-4o',
      base_url: 'https://contoso-east.openai.azure.com',
      auth: 'entra_id',
      azure_credential: { client_id: '3f1c6e2a-9b7d-4c1e-8a2f-5d6b7c8e9f01' },
    });
    expect(model?.deployments?.map((deployment) => [deployment.auth, deployment.azure_credential, deployment.api_key_env])).toEqual([
      [
        'entra_id',
        { client_id: '9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d', tenant_id: 'fabrikam.onmicrosoft.com', client_secret_env: 'FABRIKAM_AZURE_CLIENT_SECRET' },
        undefined,
      ],
      ['entra_id', { client_id: '3f1c6e2a-9b7d-4c1e-8a2f-5d6b7c8e9f01' }, undefined],
      ['api_key', undefined, 'CONTOSO_AZURE_KEY'],
    ]);
    expect(enabledModels(catalog, {}).map((entry) => entry.id)).toEqual(['azure/gpt-4o']);
    expect(keyVariables(catalog)).toEqual(['CONTOSO_AZURE_KEY', 'FABRIKAM_AZURE_CLIENT_SECRET']);
  });

  it("derives a Vertex model's endpoint from its region, the global one for global, and a deployment's from its own region", () => {
    const text = cloudCatalog(
      {
        id: 'vertex/gemini',
        provider: 'vertex',
        upstream: '{ model: gemini-2.5-flash, project: acme-prod-ml, region: global, api_key_env: GOOGLE_VERTEX_CREDENTIALS }',
        deployments: ['{ region: europe-west4 }', '{ project: acme-test-ml, base_url: "http://127.0.0.1:9000" }'],
      },
      {
        id: 'vertex/claude',
        provider: 'vertex-anthropic',
        upstream: '{ model: claude-sonnet-4-5@20250929, project: acme-prod-ml, region: us-east5, api_key_env: GOOGLE_VERTEX_CREDENTIALS }',
      },
    );
    const catalog = parseCatalog(text, 'vertex.yaml');
    const gemini = catalog.byId.get('vertex/gemini');
    expect(gemini?.upstream).toEqual({
      model: 'gemini-2.5-flash',
      project: 'acme-prod-ml',
      region: 'global',
      base_url: 'https://aiplatform.googleapis.com',
      api_key_env: 'GOOGLE_VERTEX_CREDENTIALS',
    });
    expect(gemini?.deployments).toEqual([
      {
        model: 'gemini-2.5-flash',
        project: 'acme-prod-ml',
        region: 'europe-west4',
        base_url: 'https://europe-west4-aiplatform.googleapis.com',
        api_key_env: 'GOOGLE_VERTEX_CREDENTIALS',
      },
      { model: 'gemini-2.5-flash', project: 'acme-test-ml', region: 'global', base_url: 'http://127.0.0.1:9000', api_key_env: 'GOOGLE_VERTEX_CREDENTIALS' },
    ]);
    expect(catalog.byId.get('vertex/claude')?.upstream.base_url).toBe('https://us-east5-aiplatform.googleapis.com');
  });

  it('reads the same catalog written as JSON', () => {
    const fromYaml = parseCatalog(minimal, 'minimal.yaml');
    const asJson = JSON.stringify({
      models: [
        {
          id: 'sim-a',
          provider: 'simulated',
          owned_by: 'gateway',
          created: 1735689600,
          upstream: { model: 'sim-a' },
          pricing: { input: 2.5, output: '10' },
          context_window: 1000,
          max_output_tokens: 1000,
          capabilities: { tools: false, vision: false, streaming: true, json_mode: false },
          quality_tier: 'standard',
        },
      ],
    });
    expect(parseCatalog(asJson, 'catalog.json').models[0]).toEqual(fromYaml.models[0]);
  });
});

describe('loadCatalog', () => {
  it('names the path when the file cannot be read', () => {
    expect(errorOf(() => loadCatalog('/nonexistent/catalog.yaml')).message).toBe('/nonexistent/catalog.yaml: cannot read the catalog: ENOENT');
  });

  it('names the path it was given in validation errors', () => {
    const path = join(INVALID_FIXTURES, 'self-fallback.yaml');
    expect(errorOf(() => loadCatalog(path)).message).toBe(`${path}: models[0] (sim-a): fallbacks[0] must not be the model itself`);
  });
});

describe('the default catalog', () => {
  const catalog = loadCatalog(DEFAULT_CATALOG_PATH);

  it('loads, with the three simulated models chained by their fallbacks', () => {
    expect(catalog.byId.get('sim-mini')).toMatchObject({
      quality_tier: 'economy',
      capabilities: { tools: true, vision: false, json_mode: true },
      fallbacks: [],
    });
    expect(catalog.byId.get('sim-standard')).toMatchObject({ quality_tier: 'standard', capabilities: { tools: true, vision: true }, fallbacks: ['sim-mini'] });
    expect(catalog.byId.get('sim-pro')).toMatchObject({
      quality_tier: 'premium',
      capabilities: { tools: true, vision: true },
      fallbacks: ['sim-standard', 'sim-mini'],
    });
    const [mini, standard, pro] = ['sim-mini', 'sim-standard', 'sim-pro'].map((id) => catalog.byId.get(id)!);
    expect(pro.context_window).toBeGreaterThan(standard.context_window);
    expect(costPicoUsd(mini.pricing, { prompt_tokens: 1000, completion_tokens: 1000 })).toBeLessThan(
      costPicoUsd(standard.pricing, { prompt_tokens: 1000, completion_tokens: 1000 }),
    );
    expect(costPicoUsd(standard.pricing, { prompt_tokens: 1000, completion_tokens: 1000 })).toBeLessThan(
      costPicoUsd(pro.pricing, { prompt_tokens: 1000, completion_tokens: 1000 }),
    );
    for (const model of [mini, standard, pro]) {
      expect(model.simulation?.time_to_first_token_ms).toBeGreaterThanOrEqual(10);
      expect(model.simulation?.time_to_first_token_ms).toBeLessThanOrEqual(30);
    }
  });

  it('prices gpt-4o at its list price', () => {
    expect(catalog.byId.get('gpt-4o')?.pricing).toEqual(
      micro({ input: 2_500_000, cached: 1_250_000, write: 2_500_000, write1h: 2_500_000, output: 10_000_000 }),
    );
  });

  it("prices the Anthropic models at Anthropic's published rates: writes 1.25x (5m) and 2x (1h), reads 0.1x input", () => {
    expect(catalog.byId.get('anthropic/claude-sonnet-4')?.pricing).toEqual(
      micro({ input: 3_000_000, cached: 300_000, write: 3_750_000, write1h: 6_000_000, output: 15_000_000 }),
    );
    expect(catalog.byId.get('anthropic/claude-3-5-haiku')?.pricing).toEqual(
      micro({ input: 800_000, cached: 80_000, write: 1_000_000, write1h: 1_600_000, output: 4_000_000 }),
    );
  });

  it('turns on only the simulated models when no key variable is set', () => {
    expect(enabledModels(catalog, {}).map((model) => model.id)).toEqual(['sim-mini', 'sim-standard', 'sim-pro', 'sim-embedding']);
  });

  it("turns a provider's models on only when its key variable is set and non-empty", () => {
    const simulated = ['sim-mini', 'sim-standard', 'sim-pro', 'sim-embedding'];
    expect(enabledModels(catalog, { OPENAI_API_KEY: '' }).map((model) => model.id)).toEqual(simulated);
    const withAnthropic = enabledModels(catalog, { ANTHROPIC_API_KEY: 'sk-ant-test' }).map((model) => model.id);
    expect(withAnthropic).toEqual([...simulated, 'anthropic/claude-sonnet-4', 'anthropic/claude-3-5-haiku']);
    const withOpenAi = enabledModels(catalog, { OPENAI_API_KEY: 'sk-test' }).map((model) => model.id);
    expect(withOpenAi).toEqual([
      ...simulated,
      'gpt-4o',
      'gpt-4o-mini',
      'gpt-4.1',
      'gpt-4.1-mini',
      'gpt-4.1-nano',
      'o3-mini',
      'text-embedding-3-small',
      'text-embedding-3-large',
    ]);
  });

  it("gives its embedding models their vectors' length and input prices, and no output price", () => {
    const embedding = catalog.models.filter((model) => model.kind === 'embedding');
    expect(
      embedding.map((model) => [model.id, model.embedding?.dimensions, model.pricing.input_micro_usd_per_mtok, model.pricing.output_micro_usd_per_mtok]),
    ).toEqual([
      ['sim-embedding', 1536, 20_000, 0],
      ['text-embedding-3-small', 1536, 20_000, 0],
      ['text-embedding-3-large', 3072, 130_000, 0],
      ['google/gemini-embedding-001', 3072, 150_000, 0],
    ]);
    expect(embedding.every((model) => model.max_output_tokens === 0 && model.fallbacks.length === 0 && !model.capabilities.tools)).toBe(true);
  });

  it('names a key variable for every real model, and every provider listed in the brief', () => {
    const variables = new Set(catalog.models.filter((model) => model.provider !== 'simulated').map((model) => model.upstream.api_key_env));
    expect([...variables].sort()).toEqual([
      'ANTHROPIC_API_KEY',
      'AWS_BEARER_TOKEN_BEDROCK',
      'DEEPSEEK_API_KEY',
      'GEMINI_API_KEY',
      'GROQ_API_KEY',
      'MISTRAL_API_KEY',
      'OPENAI_API_KEY',
      'TOGETHER_API_KEY',
    ]);
  });
});
