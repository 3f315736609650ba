import { describe, expect, it } from 'vitest';
import { difficultyScore, tierForScore } from './difficulty-score.js';
import { HARD_PROMPT } from '../test/prompts.js';

describe('difficultyScore', () => {
  it('scores greetings and short factual questions as economy', () => {
    for (const prompt of ['hi', '', 'Hello! How are you today?', 'What is the capital of France?']) {
      expect(tierForScore(difficultyScore(prompt)), prompt).toBe('economy');
    }
    expect(difficultyScore('hi')).toBe(0);
  });

  it('scores a design comparison with several questions as standard', () => {
    const prompt = 'Compare PostgreSQL and MongoDB for an e-commerce backend. What are the trade-offs for scalability and consistency? Which would you choose and why?';
    expect(tierForScore(difficultyScore(prompt))).toBe('standard');
  });

  it('scores a long proof with code and analysis as premium', () => {
    expect(difficultyScore(HARD_PROMPT)).toBeGreaterThanOrEqual(0.9);
    expect(tierForScore(difficultyScore(HARD_PROMPT))).toBe('premium');
  });

  it('grows with length and stays within 0..1', () => {
    const short = difficultyScore('Summarise this paragraph about the history of tea.');
    const long = difficultyScore(`Summarise this text about the history of tea. ${'Tea spread from China along trade routes to the rest of the world. '.repeat(60)}`);
    expect(long).toBeGreaterThan(short);
    expect(difficultyScore(`${HARD_PROMPT}\n${HARD_PROMPT}\n${HARD_PROMPT}`)).toBeLessThanOrEqual(1);
  });

  it('maps scores to tiers at 0.3 and 0.6', () => {
    expect([0, 0.29, 0.3, 0.59, 0.6, 1].map(tierForScore)).toEqual(['economy', 'economy', 'standard', 'standard', 'premium', 'premium']);
  });
});
