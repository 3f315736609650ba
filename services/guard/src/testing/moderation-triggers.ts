/**
 * What the fake moderation services flag: a text with FLAG_TRIGGER (harmful content), one with
 * INJECTION_TRIGGER (a prompt attack), and the e-mail addresses of a text (PII).
 */

/** A text with this in it is flagged as hateful, threatening and about self-harm. */
export const FLAG_TRIGGER = 'FLAG-ME';
/** A text with this in it (any case) is a prompt attack. */
export const INJECTION_TRIGGER = 'ignore previous instructions';

/** Whether the text has the flag trigger. */
export function hasFlagTrigger(text: string): boolean {
  return text.includes(FLAG_TRIGGER);
}

/** Whether the text has the injection trigger. */
export function hasInjectionTrigger(text: string): boolean {
  return text.toLowerCase().includes(INJECTION_TRIGGER);
}

/** The e-mail addresses of a text, where they are (UTF-16 offsets). */
export function emailsOf(text: string): Array<{ text: string; start: number; end: number }> {
  return [...text.matchAll(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g)].map((match) => ({
    text: match[0],
    start: match.index,
    end: match.index + match[0].length,
  }));
}
