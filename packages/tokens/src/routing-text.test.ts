import { describe, expect, it } from 'vitest';
import type { Message } from '@gateway/proto';
import { MAX_ROUTING_TEXT_CHARACTERS, routingText } from './routing-text.js';

const user = (text: string): Message => ({ role: 'ROLE_USER', text, tool_calls: [] });
const system = (text: string): Message => ({ role: 'ROLE_SYSTEM', text, tool_calls: [] });
const assistant = (text: string): Message => ({ role: 'ROLE_ASSISTANT', text, tool_calls: [] });

describe('routingText', () => {
  it('reads the last user message, not the system prompt or the assistant turns around it', () => {
    const persona = 'You are the support assistant of a large retailer. Follow the policy below. '.repeat(40);
    expect(routingText([system(persona), user('What are your opening hours on Sunday in the Lyon store please?')])).toBe(
      'What are your opening hours on Sunday in the Lyon store please?',
    );
    expect(routingText([system(persona), user('hi')])).toBe('hi');
    expect(
      routingText([
        user('Write a haiku about rain falling softly on the old city roofs at night.'),
        assistant('Rain taps on the roofs...'),
        user('Prove that there are infinitely many primes, step by step, with a complete argument.'),
      ]),
    ).toBe('Prove that there are infinitely many primes, step by step, with a complete argument.');
  });

  it('reads the user messages before a short follow-up, up to four messages', () => {
    expect(routingText([user('Implement a thread-safe LRU cache in Rust with generics.'), assistant('Here it is...'), user('why a Mutex?')])).toBe(
      'Implement a thread-safe LRU cache in Rust with generics.\nwhy a Mutex?',
    );
    expect(routingText([user('one'), user('two'), user('three'), user('four'), user('five')])).toBe('two\nthree\nfour\nfive');
  });

  it('reads text parts, and the system and developer messages only when there is no user message', () => {
    expect(
      routingText([
        {
          role: 'ROLE_USER',
          parts: {
            parts: [{ text: 'Describe' }, { image_url: { url: 'data:image/png;base64,AA' } }, { text: 'this chart in detail for a financial report.' }],
          },
        },
      ]),
    ).toBe('Describe\nthis chart in detail for a financial report.');
    expect(routingText([system('Name three rivers.'), { role: 'ROLE_DEVELOPER', text: 'One line.', tool_calls: [] }])).toBe('Name three rivers.\nOne line.');
    expect(routingText([])).toBe('');
  });

  it('keeps the end of a text longer than the limit', () => {
    const text = routingText([user(`${'a'.repeat(MAX_ROUTING_TEXT_CHARACTERS)}END`)]);
    expect(text).toHaveLength(MAX_ROUTING_TEXT_CHARACTERS);
    expect(text.endsWith('END')).toBe(true);
  });
});
