import { describe, expect, it } from 'vitest';
import { createExternalScanner, EXTERNAL_SERVICES, type ExternalSpec, validateExternalSpec } from './index.js';

const TEMPLATE = 'projects/acme-ml/locations/us-central1/templates/strict';
const JUDGE_URL = 'http://edge:8080/v1';
const BEDROCK = { guardrail_id: 'gr7abc12def', guardrail_version: 'DRAFT', region: 'us-east-1' };

function spec(service: string, overrides: Partial<ExternalSpec> = {}): ExternalSpec {
  return { service, baseUrl: '', credential: 'key-1', settings: {}, deadlineMs: 500, ...overrides };
}

describe('validateExternalSpec', () => {
  it('accepts a valid check of each service', () => {
    const valid = [
      spec('openai_moderation'),
      spec('openai_moderation', {
        baseUrl: 'http://moderation.internal:8080/',
        settings: { categories: 'hate,self-harm/intent', model: 'omni-moderation-latest' },
      }),
      spec('azure_content_safety', {
        baseUrl: 'https://acme.cognitiveservices.azure.com',
        settings: { threshold: '2', categories: 'Hate,self_harm', blocklists: 'a,b' },
      }),
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', settings: { mode: 'prompt_shield' } }),
      spec('lakera_guard', { settings: { project_id: 'project-1' } }),
      spec('bedrock_guardrails', { credential: '', settings: BEDROCK }),
      spec('bedrock_guardrails', {
        credential: '',
        settings: { ...BEDROCK, guardrail_id: 'arn:aws:bedrock:us-east-1:123456789012:guardrail/gr7abc12def', guardrail_version: '12' },
      }),
      spec('model_armor', { credential: '', settings: { template: TEMPLATE } }),
      spec('model_armor', { settings: { template: TEMPLATE }, deadlineMs: 0 }),
      spec('judge_model', { baseUrl: JUDGE_URL, settings: { model: 'llama-guard-3-8b' } }),
      spec('judge_model', {
        baseUrl: JUDGE_URL,
        settings: { model: 'gpt-4o-mini', format: 'json', categories: 'S1, hate,violent_crimes,Code Interpreter Abuse', max_tokens: '64' },
      }),
    ];
    expect(valid.map(validateExternalSpec)).toEqual(valid.map(() => undefined));
  });

  it.each<[string, ExternalSpec, string]>([
    [
      'an unknown service',
      spec('perspective_api'),
      'unknown service "perspective_api" (known: openai_moderation, azure_content_safety, lakera_guard, bedrock_guardrails, model_armor, judge_model)',
    ],
    ['Azure without its endpoint', spec('azure_content_safety'), 'azure_content_safety needs base_url (it has no public endpoint)'],
    ['a base_url that is not a URL', spec('openai_moderation', { baseUrl: 'api.openai.com' }), 'openai_moderation: base_url is not a URL'],
    ['a base_url of another scheme', spec('lakera_guard', { baseUrl: 'ftp://lakera.example' }), 'lakera_guard: base_url must be http or https, not ftp'],
    [
      'a base_url with credentials',
      spec('openai_moderation', { baseUrl: 'https://user:sk-secret@api.openai.com' }),
      'openai_moderation: base_url must not carry credentials (put the key in credential)',
    ],
    [
      'a base_url with a query',
      spec('openai_moderation', { baseUrl: 'https://api.openai.com/?key=1' }),
      'openai_moderation: base_url must not have a query or a fragment',
    ],
    ['OpenAI without a key', spec('openai_moderation', { credential: '' }), 'openai_moderation needs a credential (its API key)'],
    [
      'Azure without a key',
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', credential: '' }),
      'azure_content_safety needs a credential (its API key)',
    ],
    ['Lakera without a key', spec('lakera_guard', { credential: '' }), 'lakera_guard needs a credential (its API key)'],
    [
      'Bedrock without its guardrail',
      spec('bedrock_guardrails', { credential: '', settings: { region: 'us-east-1' } }),
      'bedrock_guardrails needs the settings guardrail_id, guardrail_version',
    ],
    [
      'Bedrock without its region',
      spec('bedrock_guardrails', { credential: '', settings: { guardrail_id: 'abc', guardrail_version: '1' } }),
      'bedrock_guardrails needs the setting region',
    ],
    [
      'Bedrock with a bad version',
      spec('bedrock_guardrails', { credential: '', settings: { ...BEDROCK, guardrail_version: 'latest' } }),
      'bedrock_guardrails: setting guardrail_version must be DRAFT or a version number, not "latest"',
    ],
    [
      'Bedrock with a bad region',
      spec('bedrock_guardrails', { credential: '', settings: { ...BEDROCK, region: 'Virginia' } }),
      'bedrock_guardrails: setting region must be an AWS region (us-east-1), not "Virginia"',
    ],
    [
      'Bedrock with a credential',
      spec('bedrock_guardrails', { settings: BEDROCK }),
      'bedrock_guardrails: takes no credential: it signs with the AWS credential chain of the guard',
    ],
    ['Model Armor without its template', spec('model_armor'), 'model_armor needs the setting template'],
    [
      'Model Armor with a template that is not a name',
      spec('model_armor', { settings: { template: 'strict' } }),
      'model_armor: setting template must be a template\'s name (projects/<project>/locations/<location>/templates/<id>), not "strict"',
    ],
    [
      'a setting the service does not have',
      spec('openai_moderation', { settings: { threshold: '3' } }),
      'openai_moderation has no setting threshold (its settings: model, categories)',
    ],
    [
      'an unknown OpenAI category',
      spec('openai_moderation', { settings: { categories: 'hate,spam' } }),
      'openai_moderation: setting categories names unknown categories spam (known: harassment, harassment/threatening, hate, hate/threatening, illicit, illicit/violent, self-harm, self-harm/intent, self-harm/instructions, sexual, sexual/minors, violence, violence/graphic)',
    ],
    [
      'an Azure threshold out of range',
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', settings: { threshold: '9' } }),
      'azure_content_safety: setting threshold must be a severity from 0 to 7, not "9"',
    ],
    [
      'an unknown Azure mode',
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', settings: { mode: 'jailbreak' } }),
      'azure_content_safety: setting mode must be analyze or prompt_shield, not "jailbreak"',
    ],
    [
      'an Azure threshold in prompt_shield mode',
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', settings: { mode: 'prompt_shield', threshold: '2' } }),
      'azure_content_safety: setting threshold applies to mode analyze only',
    ],
    [
      'an unknown Azure category',
      spec('azure_content_safety', { baseUrl: 'https://acme.cognitiveservices.azure.com', settings: { categories: 'Hate,Spam' } }),
      'azure_content_safety: setting categories names unknown categories Spam (known: Hate, SelfHarm, Sexual, Violence)',
    ],
    ['a judge without its model', spec('judge_model', { baseUrl: JUDGE_URL }), 'judge_model needs the setting model'],
    [
      'a judge without its endpoint',
      spec('judge_model', { settings: { model: 'llama-guard-3-8b' } }),
      'judge_model needs base_url (it has no public endpoint)',
    ],
    [
      'a judge without a key',
      spec('judge_model', { baseUrl: JUDGE_URL, credential: '', settings: { model: 'llama-guard-3-8b' } }),
      'judge_model needs a credential (its API key)',
    ],
    [
      'a judge of an unknown format',
      spec('judge_model', { baseUrl: JUDGE_URL, settings: { model: 'llama-guard-3-8b', format: 'yaml' } }),
      'judge_model: setting format must be llama_guard or json, not "yaml"',
    ],
    [
      'a judge with max_tokens out of range',
      spec('judge_model', { baseUrl: JUDGE_URL, settings: { model: 'llama-guard-3-8b', max_tokens: '0' } }),
      'judge_model: setting max_tokens must be an integer from 1 to 4096, not "0"',
    ],
    [
      'an unknown judge category',
      spec('judge_model', { baseUrl: JUDGE_URL, settings: { model: 'llama-guard-3-8b', categories: 'S1,S15,spam' } }),
      'judge_model: setting categories names unknown categories S15, spam (known, by code or name: S1 Violent Crimes, S2 Non-Violent Crimes, S3 Sex Crimes, S4 Child Exploitation, S5 Defamation, S6 Specialized Advice, S7 Privacy, S8 Intellectual Property, S9 Indiscriminate Weapons, S10 Hate, S11 Self-Harm, S12 Sexual Content, S13 Elections, S14 Code Interpreter Abuse)',
    ],
    ['a negative deadline', spec('lakera_guard', { deadlineMs: -1 }), 'lakera_guard: deadline_ms must be an integer from 0 to 60000'],
  ])('refuses %s', (_, invalid, message) => {
    expect(validateExternalSpec(invalid)).toBe(message);
  });
});

describe('createExternalScanner', () => {
  it('serves the outside services and a judge model', () => {
    expect(EXTERNAL_SERVICES).toEqual(['openai_moderation', 'azure_content_safety', 'lakera_guard', 'bedrock_guardrails', 'model_armor', 'judge_model']);
  });

  it('refuses a check validateExternalSpec refuses, with its message', () => {
    expect(() => createExternalScanner(spec('openai_moderation', { credential: '' }))).toThrow('openai_moderation needs a credential (its API key)');
  });
});
