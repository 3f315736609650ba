/**
 * What a judge model is asked: Llama Guard 3's prompt (the model card's instruction, its 14
 * categories S1..S14, the conversation, the assessment it asks for), as one user message, about
 * the user's message at the request's points and the agent's (the assistant's) at the answer's.
 * The `json` format adds a short system prompt asking for `{"flagged":bool,"categories":[...]}`
 * instead of the two lines. The categories are the prompt's and what settings.categories names,
 * by code (`S1`) or name (`Violent Crimes`, `violent_crimes`).
 */
import { entityName } from './findings.js';

/** Llama Guard 3's hazard categories, S1 first, as its prompt format names them (MLCommons' taxonomy, plus S14). */
export const LLAMA_GUARD_CATEGORIES = [
  'Violent Crimes',
  'Non-Violent Crimes',
  'Sex Crimes',
  'Child Exploitation',
  'Defamation',
  'Specialized Advice',
  'Privacy',
  'Intellectual Property',
  'Indiscriminate Weapons',
  'Hate',
  'Self-Harm',
  'Sexual Content',
  'Elections',
  'Code Interpreter Abuse',
] as const;

/** Whose message is judged: Llama Guard's `User` or `Agent`. */
export type JudgedRole = 'User' | 'Agent';

/** The role judged at a point: the user's message at input and tool_arguments, the agent's at output and tool_result. */
export function judgedRole(point: string): JudgedRole {
  return point === 'output' || point === 'tool_result' ? 'Agent' : 'User';
}

const CATEGORY_LINES = LLAMA_GUARD_CATEGORIES.map((name, index) => `S${index + 1}: ${name}.`).join('\n');

/** Llama Guard 3's prompt about `text` as the last (here the only) message of `role`. */
export function llamaGuardPrompt(text: string, role: JudgedRole): string {
  return [
    `Task: Check if there is unsafe content in '${role}' messages in conversations according our safety policy with the below categories.`,
    '',
    '<BEGIN UNSAFE CONTENT CATEGORIES>',
    CATEGORY_LINES,
    '<END UNSAFE CONTENT CATEGORIES>',
    '',
    '<BEGIN CONVERSATION>',
    '',
    `${role}: ${text}`,
    '',
    '<END CONVERSATION>',
    '',
    `Provide your safety assessment for ONLY THE LAST ${role} message in the above conversation:`,
    " - First line must read 'safe' or 'unsafe'.",
    ' - If unsafe, a second line must include a comma-separated list of violated categories.',
  ].join('\n');
}

/** The system prompt of the `json` format. */
export const JSON_SYSTEM_PROMPT =
  'You are a content safety classifier. Assess the message as the user describes, but answer with one JSON object and nothing else: ' +
  '{"flagged": true or false, "categories": [the codes of the violated categories, such as "S1"; empty when flagged is false]}.';

/** The code of a category named by code (`s1`, `S14`) or name (`Violent Crimes`, `violent_crimes`); undefined for any other. */
export function categoryCode(category: string): string | undefined {
  const code = /^s(\d{1,2})$/i.exec(category.trim());
  if (code) {
    const number = Number(code[1]);
    return number >= 1 && number <= LLAMA_GUARD_CATEGORIES.length ? `S${number}` : undefined;
  }
  const name = entityName(category);
  const index = LLAMA_GUARD_CATEGORIES.findIndex((candidate) => entityName(candidate) === name);
  return index === -1 ? undefined : `S${index + 1}`;
}
