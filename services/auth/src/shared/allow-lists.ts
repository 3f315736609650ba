// The allow-list rules alone, without the catalog's loader and its YAML parser (the CLI loads this file).
import { allowListProblem } from '@gateway/catalog/model-allow-list';
import { KeyInputError } from './input-error.js';

/**
 * Checks a key's or a team's allow-lists (absent or null: not given); throws KeyInputError. Both
 * follow @gateway/catalog's rules for models, so a team's list reads as a key's, and the MCP
 * tools' list the same entries and `prefix*` patterns.
 */
export function validateAllowLists(input: { allowed_models?: string[] | null; allowed_mcp_tools?: string[] | null }): void {
  const allowed = input.allowed_models;
  if (allowed !== undefined && allowed !== null) {
    const problem = Array.isArray(allowed) ? allowListProblem(allowed) : 'allowed_models must be a list of model ids and "prefix*" patterns.';
    if (problem) throw new KeyInputError('allowed_models', problem);
  }
  const tools = input.allowed_mcp_tools;
  if (tools !== undefined && tools !== null) {
    const problem = Array.isArray(tools)
      ? allowListProblem(tools)?.replace('model id', 'MCP tool name')
      : 'allowed_mcp_tools must be a list of MCP tool names, server names and "prefix*" patterns.';
    if (problem) throw new KeyInputError('allowed_mcp_tools', problem);
  }
}
