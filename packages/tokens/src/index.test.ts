import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '@gateway/proto';
import { countPromptTokens, countPromptTokensWithin } from './index.js';

const request = (text: string): Pick<ChatRequest, 'messages' | 'tools'> => ({
  messages: [{ role: 'ROLE_SYSTEM', text: 'Be brief.', tool_calls: [] }, { role: 'ROLE_USER', text, tool_calls: [] }],
  tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks a word up.', parameters_json: '{"type":"object"}' } }],
});

describe('countPromptTokensWithin', () => {
  it('counts exactly as countPromptTokens up to the limit, and stops past it', () => {
    const prompt = request('The quick brown fox jumps over the lazy dog. '.repeat(50));
    const total = countPromptTokens(prompt);
    expect(total).toBeGreaterThan(500);
    expect(countPromptTokensWithin(prompt, total)).toBe(total);
    expect(countPromptTokensWithin(prompt, total + 1_000)).toBe(total);
    expect(countPromptTokensWithin(prompt, total - 1)).toBeUndefined();
    expect(countPromptTokensWithin(prompt, 5)).toBeUndefined();
  });
});
