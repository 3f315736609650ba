/**
 * Model allow-lists: which models a key (or its team) may use. A list holds model ids and `prefix*`
 * patterns (every id that starts with prefix); an id is allowed by a list when one of its entries
 * matches it exactly or as a prefix. A request may use a model only when EVERY list that applies
 * allows it; no list at all allows every model, an empty list none. Case-sensitive, as catalog ids
 * are. The one matcher of the TypeScript side (edge, router); auth's quota script has its Lua
 * mirror, @gateway/keyspace's scripts/lib/model-allow-list.lua, and a test holds both to the same
 * table of cases.
 */

/** The most entries an allow-list may hold. */
export const MAX_ALLOW_LIST_ENTRIES = 100;
/** The longest entry (id or pattern) an allow-list may hold. */
export const MAX_ALLOW_LIST_ENTRY_LENGTH = 128;

/** Whether one entry (an id, or `prefix*`) matches a model id. */
export function allowEntryMatches(entry: string, modelId: string): boolean {
  if (entry.endsWith('*')) return modelId.startsWith(entry.slice(0, -1));
  return entry === modelId;
}

/** Whether one list allows a model id. */
export function listAllows(list: readonly string[], modelId: string): boolean {
  return list.some((entry) => allowEntryMatches(entry, modelId));
}

/** Whether every list (each a key's or a team's `models`) allows a model id; true when there is none. */
export function modelAllowed(lists: readonly (readonly string[])[], modelId: string): boolean {
  return lists.every((list) => listAllows(list, modelId));
}

/**
 * What is wrong with an allow-list as given (a sentence naming the entry), or undefined when it is
 * valid: at most MAX_ALLOW_LIST_ENTRIES entries, each a non-empty string of at most
 * MAX_ALLOW_LIST_ENTRY_LENGTH characters without whitespace, with `*` only as its last character.
 */
export function allowListProblem(list: readonly unknown[]): string | undefined {
  if (list.length > MAX_ALLOW_LIST_ENTRIES) return `An allow-list has at most ${MAX_ALLOW_LIST_ENTRIES} entries, not ${list.length}.`;
  for (const [index, entry] of list.entries()) {
    if (typeof entry !== 'string' || entry.length === 0) return `Entry ${index} of the allow-list must be a non-empty model id or "prefix*" pattern.`;
    if (entry.length > MAX_ALLOW_LIST_ENTRY_LENGTH) return `Entry ${index} of the allow-list is longer than ${MAX_ALLOW_LIST_ENTRY_LENGTH} characters.`;
    if (/\s/.test(entry)) return `Entry ${index} of the allow-list ("${entry}") contains whitespace.`;
    if (entry.indexOf('*') !== -1 && entry.indexOf('*') !== entry.length - 1)
      return `Entry ${index} of the allow-list ("${entry}") may have "*" only as its last character.`;
  }
  return undefined;
}

/**
 * The cases both matchers (this module and the quota script's Lua) must answer alike: the lists
 * that apply, a model id, and whether it is allowed.
 */
export const ALLOW_LIST_CASES: readonly { lists: string[][]; model: string; allowed: boolean }[] = [
  { lists: [], model: 'gpt-4o', allowed: true },
  { lists: [[]], model: 'gpt-4o', allowed: false },
  { lists: [['gpt-4o']], model: 'gpt-4o', allowed: true },
  { lists: [['gpt-4o']], model: 'gpt-4o-mini', allowed: false },
  { lists: [['gpt-4o']], model: 'GPT-4o', allowed: false },
  { lists: [['gpt-4o*']], model: 'gpt-4o-mini', allowed: true },
  { lists: [['gpt-4o*']], model: 'gpt-4o', allowed: true },
  { lists: [['gpt-4o*']], model: 'gpt-4', allowed: false },
  { lists: [['*']], model: 'anything-at-all', allowed: true },
  { lists: [['sim-*', 'claude-sonnet-4']], model: 'claude-sonnet-4', allowed: true },
  { lists: [['sim-*', 'claude-sonnet-4']], model: 'claude-sonnet-4-5', allowed: false },
  { lists: [['sim-*'], ['sim-mini']], model: 'sim-mini', allowed: true },
  { lists: [['sim-*'], ['sim-mini']], model: 'sim-pro', allowed: false },
  { lists: [['sim-*'], []], model: 'sim-mini', allowed: false },
  { lists: [['a.b*']], model: 'axb-1', allowed: false },
  { lists: [['a.b*']], model: 'a.b-1', allowed: true },
  { lists: [['m%d+']], model: 'm%d+', allowed: true },
  { lists: [['m%d+']], model: 'm1', allowed: false },
  { lists: [['gpt-4o']], model: '', allowed: false },
];
