/**
 * The admin API through fastify's inject(), on the real edge app with auth faked through its own
 * client interface: the exact answer to each refused body, the admin token checks, and the
 * CreateKey and UpdateKey requests auth receives for the bodies it accepts.
 */
import { describe, expect, it } from 'vitest';
import type { AuthServiceClient, CreateKeyResponseOutput, KeyInfoOutput, ListKeysResponseOutput } from '@gateway/proto';
import { fakeGrpcClient, injectAs, type ReceivedCall, recordingEdge, testEdge } from '../../testing/test-edge.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const KEYS_FIELDS = 'plan, name, limits, budgets, routing_policy, catalog_fallbacks, allowed_models, allowed_mcp_tools, log_bodies';

/** A key as auth answers it, with an override of every kind. */
const KEY: KeyInfoOutput = {
  key_id: 'key_0123456789abcdef',
  plan: 'PLAN_PRO',
  name: 'ci',
  created_at_ms: 1_700_000_000_500,
  last_used_at_ms: 0,
  revoked: false,
  requests_per_minute_override: { per_minute: 60, value: 'per_minute' },
  tokens_per_minute_override: { unlimited: true, value: 'unlimited' },
  requests_per_minute: { per_minute: 60, value: 'per_minute' },
  tokens_per_minute: { unlimited: true, value: 'unlimited' },
  routing_policy: 'fast',
  catalog_fallbacks_override: true,
  _catalog_fallbacks_override: 'catalog_fallbacks_override',
  catalog_fallbacks: true,
  daily_budget_override: { micro_usd: 5_000_000, value: 'micro_usd' },
  monthly_budget_override: { unlimited: true, value: 'unlimited' },
  daily_budget: { micro_usd: 5_000_000, value: 'micro_usd' },
  monthly_budget: { unlimited: true, value: 'unlimited' },
  allowed_models: { models: ['sim-*', 'gpt-4o'] },
};

/** KEY as the admin API shows it. */
const KEY_JSON = {
  object: 'api_key',
  id: 'key_0123456789abcdef',
  name: 'ci',
  plan: 'pro',
  created_at: 1_700_000_000,
  last_used_at: null,
  revoked: false,
  limits: { requests_per_minute: 60, tokens_per_minute: 'unlimited' },
  budgets: { daily_usd: 5, monthly_usd: null },
  overrides: { requests_per_minute: 60, tokens_per_minute: 'unlimited', catalog_fallbacks: true, daily_budget_usd: 5, monthly_budget_usd: 'unlimited' },
  routing_policy: 'fast',
  catalog_fallbacks: true,
  allowed_models: ['sim-*', 'gpt-4o'],
  allowed_mcp_tools: null,
  team_id: null,
  log_bodies: false,
};

/** auth's key RPCs: each answers with one key, its requests seen by `record`. */
function fakeAuth(record?: (call: ReceivedCall) => void): AuthServiceClient {
  const created: CreateKeyResponseOutput = { key: KEY, secret: 'br-created-secret' };
  const listed: ListKeysResponseOutput = { keys: [KEY] };
  return fakeGrpcClient<AuthServiceClient>({ CreateKey: created, UpdateKey: KEY, GetKey: KEY, ListKeys: listed, RevokeKey: KEY }, record);
}

/** The requests auth received, in order, by method. */
const { app, received } = recordingEdge({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, (record) => ({ auth: fakeAuth(record) }));

/** A request to the admin API's keys with the admin token, or `authorization`; `body` is sent as JSON, a string as it is. */
function admin(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, authorization = `Bearer ${ADMIN_TOKEN}`) {
  return injectAs(app(), { authorization }, method, `/admin/v1/keys${path}`, body);
}

/** The double next to `value`, up or down: what the budget bounds are exact to. */
function nextDouble(value: number, direction: 1 | -1): number {
  const bits = new BigInt64Array(new Float64Array([value]).buffer);
  bits[0]! += BigInt(direction);
  return new Float64Array(bits.buffer)[0]!;
}

const NOT_AN_OBJECT = 'The request body must be a JSON object.';
const PLAN = "'plan' must be one of starter, pro, enterprise.";
const NAME = "'name' must be a string of at most 200 characters.";
const POLICY = "'routing_policy' must be 1 to 64 letters, digits, '.', '_', ':' or '-', or null to remove it.";
const createLimit = (field: string) => `'limits.${field}' must be a positive integer or "unlimited".`;
const createBudget = (field: string) => `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited".`;
const ALLOWED =
  '\'allowed_models\' must be a list of at most 100 model ids or "prefix*" patterns (each 1 to 128 characters, no whitespace, "*" only as the last character), or null for every model.';
const unknownKeyField = (field: string) => `Unknown field '${field}'. Allowed: ${KEYS_FIELDS}.`;
/** A creation takes team_id besides: a key joins its team when created, never later. */
const unknownCreationField = (field: string) => `Unknown field '${field}'. Allowed: ${KEYS_FIELDS}, team_id.`;

type Refusal = [string, unknown, string | null, string, string];

/** [what, group, field, value] of each limit or budget a creation of a pro key refuses. */
const REFUSED_SETTINGS: Array<[string, 'limits' | 'budgets', string, unknown]> = [
  ['a limit of 0', 'limits', 'requests_per_minute', 0],
  ['a negative limit', 'limits', 'tokens_per_minute', -1],
  ['a fractional limit', 'limits', 'requests_per_minute', 1.5],
  ['a limit as a string', 'limits', 'requests_per_minute', '60'],
  ['a limit past 2^53 - 1', 'limits', 'tokens_per_minute', 2 ** 53],
  ['a null limit', 'limits', 'requests_per_minute', null],
  ['a budget of 0', 'budgets', 'daily_usd', 0],
  ['a negative budget', 'budgets', 'daily_usd', -1],
  ['a budget under half a micro-dollar', 'budgets', 'monthly_usd', nextDouble(5e-7, -1)],
  ['a budget past 2^53 - 1 micro-dollars', 'budgets', 'monthly_usd', nextDouble(9007199254.74099, 1)],
  ['a budget as a string', 'budgets', 'daily_usd', '5'],
  ['a null budget', 'budgets', 'daily_usd', null],
];
const SETTING_MESSAGES = { limits: createLimit, budgets: createBudget };

/** The refusal of a pro key's creation whose `field` of `group` is `value`, as the group's message names it. */
function refusedSetting([what, group, field, value]: (typeof REFUSED_SETTINGS)[number]): Refusal {
  return [what, { plan: 'pro', [group]: { [field]: value } }, `${group}.${field}`, SETTING_MESSAGES[group](field), 'invalid_value'];
}

/** [what, body, param, message, code] of each refused creation. */
const REFUSED_CREATIONS: Refusal[] = [
  ['a number', '5', null, NOT_AN_OBJECT, 'invalid_json'],
  ['an array', '[{"plan":"pro"}]', null, NOT_AN_OBJECT, 'invalid_json'],
  ['a string', '"pro"', null, NOT_AN_OBJECT, 'invalid_json'],
  ['no plan', {}, 'plan', PLAN, 'invalid_value'],
  ['JSON null (no plan)', 'null', 'plan', PLAN, 'invalid_value'],
  ['an unknown field', { plan: 'pro', owner: 'me' }, 'owner', unknownCreationField('owner'), 'unknown_parameter'],
  ['an unknown field, before the missing plan', { Plan: 'pro' }, 'Plan', unknownCreationField('Plan'), 'unknown_parameter'],
  ['an unknown field named with / and ~', { plan: 'pro', 'a/b~c': 1 }, 'a/b~c', unknownCreationField('a/b~c'), 'unknown_parameter'],
  ['an unknown plan', { plan: 'free' }, 'plan', PLAN, 'invalid_value'],
  ['a plan in capitals', { plan: 'PRO' }, 'plan', PLAN, 'invalid_value'],
  ['a name inherited by every object', { plan: 'toString' }, 'plan', PLAN, 'invalid_value'],
  ['a plan that is no string', { plan: 2 }, 'plan', PLAN, 'invalid_value'],
  ['a name that is no string', { plan: 'pro', name: 5 }, 'name', NAME, 'invalid_value'],
  ['a name of 201 characters', { plan: 'pro', name: 'n'.repeat(201) }, 'name', NAME, 'invalid_value'],
  ['a routing policy with a space', { plan: 'pro', routing_policy: 'two words' }, 'routing_policy', POLICY, 'invalid_value'],
  ['a routing policy of 65 characters', { plan: 'pro', routing_policy: 'p'.repeat(65) }, 'routing_policy', POLICY, 'invalid_value'],
  ['an empty routing policy', { plan: 'pro', routing_policy: '' }, 'routing_policy', POLICY, 'invalid_value'],
  ['a routing policy ending in a newline', { plan: 'pro', routing_policy: 'fast\n' }, 'routing_policy', POLICY, 'invalid_value'],
  ['catalog_fallbacks null', { plan: 'pro', catalog_fallbacks: null }, 'catalog_fallbacks', "'catalog_fallbacks' must be true or false.", 'invalid_value'],
  ['catalog_fallbacks "yes"', { plan: 'pro', catalog_fallbacks: 'yes' }, 'catalog_fallbacks', "'catalog_fallbacks' must be true or false.", 'invalid_value'],
  ['allowed_models that is a string', { plan: 'pro', allowed_models: 'sim-*' }, 'allowed_models', ALLOWED, 'invalid_value'],
  ['allowed_models with an empty entry', { plan: 'pro', allowed_models: ['sim-mini', ''] }, 'allowed_models', ALLOWED, 'invalid_value'],
  ['allowed_models with a * inside', { plan: 'pro', allowed_models: ['gpt*4o'] }, 'allowed_models', ALLOWED, 'invalid_value'],
  ['allowed_models with a space', { plan: 'pro', allowed_models: ['gpt 4o'] }, 'allowed_models', ALLOWED, 'invalid_value'],
  [
    'allowed_models of 101 entries',
    { plan: 'pro', allowed_models: Array.from({ length: 101 }, (_, index) => `m${index}`) },
    'allowed_models',
    ALLOWED,
    'invalid_value',
  ],
  ['allowed_models with an entry of 129 characters', { plan: 'pro', allowed_models: ['m'.repeat(129)] }, 'allowed_models', ALLOWED, 'invalid_value'],
  ['limits that are no object', { plan: 'pro', limits: 60 }, null, NOT_AN_OBJECT, 'invalid_json'],
  ['limits that are null', { plan: 'pro', limits: null }, null, NOT_AN_OBJECT, 'invalid_json'],
  [
    'an unknown limit',
    { plan: 'pro', limits: { rpm: 60 } },
    'rpm',
    "Unknown field 'rpm'. Allowed: requests_per_minute, tokens_per_minute.",
    'unknown_parameter',
  ],
  ['budgets that are an array', { plan: 'pro', budgets: [5] }, null, NOT_AN_OBJECT, 'invalid_json'],
  [
    'an unknown budget',
    { plan: 'pro', budgets: { weekly_usd: 5 } },
    'weekly_usd',
    "Unknown field 'weekly_usd'. Allowed: daily_usd, monthly_usd.",
    'unknown_parameter',
  ],
  ...REFUSED_SETTINGS.map(refusedSetting),
  ['an infinite budget (1e400)', '{"plan":"pro","budgets":{"daily_usd":1e400}}', 'budgets.daily_usd', createBudget('daily_usd'), 'invalid_value'],
];

/** [what, body, param, message] of creations with several faults: the one named is the first the admin API checks. */
const FIRST_FAULTS: Array<[string, unknown, string | null, string]> = [
  ['an unknown field before a bad plan', { plan: 'free', extra: 1 }, 'extra', unknownCreationField('extra')],
  ['the plan before the name', { name: 5, plan: 'free' }, 'plan', PLAN],
  ['the name before the routing policy', { routing_policy: '', name: 5, plan: 'pro' }, 'name', NAME],
  ['the routing policy before catalog_fallbacks', { catalog_fallbacks: 1, routing_policy: '', plan: 'pro' }, 'routing_policy', POLICY],
  ['catalog_fallbacks before the limits', { limits: 5, catalog_fallbacks: 1, plan: 'pro' }, 'catalog_fallbacks', "'catalog_fallbacks' must be true or false."],
  [
    'the limits before the budgets',
    { budgets: { daily_usd: 0 }, limits: { requests_per_minute: 0 }, plan: 'pro' },
    'limits.requests_per_minute',
    createLimit('requests_per_minute'),
  ],
  [
    "an unknown limit before a bad limit's value",
    { plan: 'pro', limits: { requests_per_minute: 0, rpm: 1 } },
    'rpm',
    "Unknown field 'rpm'. Allowed: requests_per_minute, tokens_per_minute.",
  ],
  [
    'requests before tokens',
    { plan: 'pro', limits: { tokens_per_minute: 0, requests_per_minute: 0 } },
    'limits.requests_per_minute',
    createLimit('requests_per_minute'),
  ],
  ['daily before monthly', { plan: 'pro', budgets: { monthly_usd: 0, daily_usd: 0 } }, 'budgets.daily_usd', createBudget('daily_usd')],
];

const updateLimit = (field: string) => `'limits.${field}' must be a positive integer or "unlimited", or null for the plan's limit.`;
const updateBudget = (field: string) =>
  `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited", or null for the plan's budget.`;
const NOTHING_TO_CHANGE =
  'Nothing to change: send plan, name, limits, budgets, routing_policy, catalog_fallbacks, allowed_models, allowed_mcp_tools or log_bodies.';

/** [what, body, param, message, code] of each refused change. */
const REFUSED_CHANGES: Refusal[] = [
  ['an empty object', {}, null, NOTHING_TO_CHANGE, 'invalid_value'],
  ['JSON null', 'null', null, NOTHING_TO_CHANGE, 'invalid_value'],
  ['a number', '5', null, NOT_AN_OBJECT, 'invalid_json'],
  ['an array', '[]', null, NOT_AN_OBJECT, 'invalid_json'],
  ['an unknown field', { name: 'x', owner: 'me' }, 'owner', unknownKeyField('owner'), 'unknown_parameter'],
  ['an unknown plan', { plan: 'free' }, 'plan', PLAN, 'invalid_value'],
  ['a null plan', { plan: null }, 'plan', PLAN, 'invalid_value'],
  ['a null name', { name: null }, 'name', NAME, 'invalid_value'],
  ['a name of 201 characters', { name: 'n'.repeat(201) }, 'name', NAME, 'invalid_value'],
  ['a bad routing policy', { routing_policy: 'a b' }, 'routing_policy', POLICY, 'invalid_value'],
  [
    'catalog_fallbacks "yes"',
    { catalog_fallbacks: 'yes' },
    'catalog_fallbacks',
    "'catalog_fallbacks' must be true or false, or null for the plan's default.",
    'invalid_value',
  ],
  ['limits that are null', { limits: null }, null, NOT_AN_OBJECT, 'invalid_json'],
  ['a negative limit', { limits: { requests_per_minute: -3 } }, 'limits.requests_per_minute', updateLimit('requests_per_minute'), 'invalid_value'],
  ['a limit "UNLIMITED"', { limits: { tokens_per_minute: 'UNLIMITED' } }, 'limits.tokens_per_minute', updateLimit('tokens_per_minute'), 'invalid_value'],
  ['an unknown budget', { budgets: { daily: 1 } }, 'daily', "Unknown field 'daily'. Allowed: daily_usd, monthly_usd.", 'unknown_parameter'],
  ['a budget of 0', { budgets: { monthly_usd: 0 } }, 'budgets.monthly_usd', updateBudget('monthly_usd'), 'invalid_value'],
  ['a budget as a boolean', { budgets: { daily_usd: true } }, 'budgets.daily_usd', updateBudget('daily_usd'), 'invalid_value'],
];

async function expectRefused(response: Awaited<ReturnType<typeof admin>>, param: string | null, message: string, code: string): Promise<void> {
  expect(response.statusCode).toBe(400);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json()).toEqual({ error: { message, type: 'invalid_request_error', param, code } });
  expect(received).toEqual([]);
}

describe('the admin token', () => {
  it('is required: none is a 401, and auth is never asked', async () => {
    for (const authorization of ['', 'Basic YWRtaW46YWRtaW4=', 'Bearer']) {
      const response = await admin('POST', '', { plan: 'pro' }, authorization);
      expect(response.statusCode, authorization).toBe(401);
      expect(response.json()).toEqual({
        error: {
          message: 'The admin API needs an admin token in an Authorization header (Bearer).',
          type: 'authentication_error',
          param: null,
          code: 'missing_admin_token',
        },
      });
    }
    expect(received).toEqual([]);
  });

  it('must be the configured one: another is a 401, checked before the body', async () => {
    const response = await admin('POST', '', '{"not":"checked"}', `Bearer ${ADMIN_TOKEN}x`);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({
      error: { message: 'The admin token is not valid.', type: 'authentication_error', param: null, code: 'invalid_admin_token' },
    });
    expect(received).toEqual([]);
  });

  it('is not a gateway API key: a br- key is a 403', async () => {
    const response = await admin('PATCH', `/${KEY.key_id}`, { plan: 'pro' }, 'Bearer br-0123456789abcdef0123456789abcdef');
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({
      error: { message: 'An API key cannot use the admin API: use an admin token.', type: 'permission_error', param: null, code: 'admin_token_required' },
    });
    expect(received).toEqual([]);
  });

  it('when none is configured, the admin API does not exist', async () => {
    const without = await testEdge({ EDGE_ADMIN_TOKEN: '' }, { auth: fakeAuth() });
    try {
      const response = await injectAs(without, ADMIN_TOKEN, 'POST', '/admin/v1/keys', { plan: 'pro' });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ error: { code: 'unknown_url' } });
    } finally {
      await without.close();
    }
  });
});

describe('POST /admin/v1/keys', () => {
  it.each(REFUSED_CREATIONS)('refuses %s', async (_what, body, param, message, code) => {
    await expectRefused(await admin('POST', '', body), param, message, code);
  });

  it('refuses a request without a body as one without a plan', async () => {
    await expectRefused(await admin('POST', ''), 'plan', PLAN, 'invalid_value');
  });

  it.each(FIRST_FAULTS)('names the first fault: %s', async (_what, body, param, message) => {
    const code = message.startsWith('Unknown field') ? 'unknown_parameter' : 'invalid_value';
    await expectRefused(await admin('POST', '', body), param, message, code);
  });

  it('sends auth every setting, limits as they are and budgets in micro-dollars, and answers the key with its secret', async () => {
    const response = await admin('POST', '', {
      plan: 'pro',
      name: 'n'.repeat(200),
      routing_policy: 'fast:v2.1_a-b',
      catalog_fallbacks: true,
      allowed_models: ['sim-*', 'gpt-4o', '*'],
      limits: { requests_per_minute: 60, tokens_per_minute: 'unlimited' },
      budgets: { daily_usd: 5, monthly_usd: 'unlimited' },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({ ...KEY_JSON, secret: 'br-created-secret' });
    expect(received).toEqual([
      {
        method: 'CreateKey',
        request: {
          plan: 'PLAN_PRO',
          name: 'n'.repeat(200),
          routing_policy: 'fast:v2.1_a-b',
          catalog_fallbacks_override: true,
          requests_per_minute_override: { per_minute: 60 },
          tokens_per_minute_override: { unlimited: true },
          daily_budget_override: { micro_usd: 5_000_000 },
          monthly_budget_override: { unlimited: true },
          allowed_models: { models: ['sim-*', 'gpt-4o', '*'] },
        },
      },
    ]);
  });

  it('sends only the plan when the body sets nothing else, and a null routing policy as none', async () => {
    expect((await admin('POST', '', { plan: 'starter' })).statusCode).toBe(201);
    expect((await admin('POST', '', { plan: 'enterprise', routing_policy: null, limits: {}, budgets: {} })).statusCode).toBe(201);
    expect(received).toEqual([
      { method: 'CreateKey', request: { plan: 'PLAN_STARTER' } },
      { method: 'CreateKey', request: { plan: 'PLAN_ENTERPRISE', routing_policy: '' } },
    ]);
  });

  it('rounds budgets to the micro-dollar, from half a micro-dollar up to 2^53 - 1 micro-dollars', async () => {
    for (const [usd, micro] of [
      [0.1234567, 123_457],
      [5e-7, 1],
      [9007199254.74099, 9_007_199_254_740_990],
    ] as const) {
      received.length = 0;
      const response = await admin('POST', '', { plan: 'pro', budgets: { daily_usd: usd } });
      expect(response.statusCode, String(usd)).toBe(201);
      expect(received).toEqual([{ method: 'CreateKey', request: { plan: 'PLAN_PRO', daily_budget_override: { micro_usd: micro } } }]);
    }
  });
});

describe('PATCH /admin/v1/keys/:id', () => {
  it.each(REFUSED_CHANGES)('refuses %s', async (_what, body, param, message, code) => {
    await expectRefused(await admin('PATCH', `/${KEY.key_id}`, body), param, message, code);
  });

  it('refuses a request without a body as one with nothing to change', async () => {
    await expectRefused(await admin('PATCH', `/${KEY.key_id}`), null, NOTHING_TO_CHANGE, 'invalid_value');
  });

  it("sends auth the changes, null as the plan's default, and answers the key", async () => {
    const response = await admin('PATCH', `/${KEY.key_id}`, {
      plan: 'enterprise',
      name: '',
      routing_policy: null,
      catalog_fallbacks: null,
      limits: { requests_per_minute: null, tokens_per_minute: 1000 },
      budgets: { daily_usd: null, monthly_usd: 12.5 },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(KEY_JSON);
    expect(received).toEqual([
      {
        method: 'UpdateKey',
        request: {
          key_id: KEY.key_id,
          plan: 'PLAN_ENTERPRISE',
          name: '',
          routing_policy: '',
          catalog_fallbacks_plan_default: true,
          requests_per_minute_override: { plan_default: true },
          tokens_per_minute_override: { per_minute: 1000 },
          daily_budget_override: { plan_default: true },
          monthly_budget_override: { micro_usd: 12_500_000 },
        },
      },
    ]);
  });

  it('sends only what the body changes', async () => {
    await admin('PATCH', '/key_a', { catalog_fallbacks: false });
    await admin('PATCH', '/key_b', { limits: { tokens_per_minute: 'unlimited' }, budgets: { monthly_usd: 'unlimited' } });
    await admin('PATCH', '/key_c', { routing_policy: 'cheap' });
    await admin('PATCH', '/key_d', { allowed_models: [] });
    await admin('PATCH', '/key_e', { allowed_models: null });
    expect(received).toEqual([
      { method: 'UpdateKey', request: { key_id: 'key_a', catalog_fallbacks_override: false } },
      { method: 'UpdateKey', request: { key_id: 'key_b', tokens_per_minute_override: { unlimited: true }, monthly_budget_override: { unlimited: true } } },
      { method: 'UpdateKey', request: { key_id: 'key_c', routing_policy: 'cheap' } },
      // An empty list allows no model; null lets the key use every model again.
      { method: 'UpdateKey', request: { key_id: 'key_d', allowed_models: { models: [] } } },
      { method: 'UpdateKey', request: { key_id: 'key_e', clear_allowed_models: true } },
    ]);
  });
});

describe('the other admin routes', () => {
  it('list, read and revoke keys through auth', async () => {
    expect((await admin('GET', '')).json()).toEqual({ object: 'list', data: [KEY_JSON] });
    expect((await admin('GET', `/${KEY.key_id}`)).json()).toEqual(KEY_JSON);
    expect((await admin('DELETE', `/${KEY.key_id}`)).json()).toEqual(KEY_JSON);
    expect(received).toEqual([
      { method: 'ListKeys', request: {} },
      { method: 'GetKey', request: { key_id: KEY.key_id } },
      { method: 'RevokeKey', request: { key_id: KEY.key_id } },
    ]);
  });
});
