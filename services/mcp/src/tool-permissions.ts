/**
 * Which upstream tools a caller may see and call: every MCP tool allow-list that applies to its
 * key (its own, its team's, from auth's decision) must allow the namespaced name. An entry is a
 * namespaced tool (`github__create_issue`), a whole server (`github`, the same as `github__*`), or
 * a `prefix*` pattern over namespaced names (`github__get_*`, `*`). No list: every tool.
 */

/** Separates a server's name from its tool's in a namespaced name. Server names never contain "_". */
export const NAMESPACE_SEPARATOR = '__';

/** The namespaced name of an upstream tool or prompt. */
export function namespaced(server: string, name: string): string {
  return `${server}${NAMESPACE_SEPARATOR}${name}`;
}

/** The server and upstream name of a namespaced name, or undefined when it has no separator. */
export function splitNamespaced(name: string): { server: string; name: string } | undefined {
  const at = name.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0) return undefined;
  return { server: name.slice(0, at), name: name.slice(at + NAMESPACE_SEPARATOR.length) };
}

function entryAllows(entry: string, name: string): boolean {
  if (entry.endsWith('*')) return name.startsWith(entry.slice(0, -1));
  if (!entry.includes(NAMESPACE_SEPARATOR)) return name.startsWith(`${entry}${NAMESPACE_SEPARATOR}`);
  return entry === name;
}

/** The allow-lists of one caller, each its entries; none: everything is allowed. */
export class ToolPermissions {
  constructor(private readonly lists: readonly (readonly string[])[]) {}

  /** Whether every list allows the namespaced tool (or prompt) name. */
  allows(namespacedName: string): boolean {
    return this.lists.every((list) => list.some((entry) => entryAllows(entry, namespacedName)));
  }

  /**
   * Whether every list grants something on the server (a tool of it, or all of it): its resources
   * are visible to a caller that may use any of its tools.
   */
  allowsAnyOf(server: string): boolean {
    const prefix = `${server}${NAMESPACE_SEPARATOR}`;
    return this.lists.every((list) =>
      list.some((entry) => {
        if (entry.endsWith('*')) {
          const stem = entry.slice(0, -1);
          return prefix.startsWith(stem) || stem.startsWith(prefix);
        }
        return entry === server || entry.startsWith(prefix);
      }),
    );
  }
}
