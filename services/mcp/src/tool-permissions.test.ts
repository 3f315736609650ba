import { describe, expect, it } from 'vitest';
import { namespaced, splitNamespaced, ToolPermissions } from './tool-permissions.js';

describe('ToolPermissions', () => {
  it.each([
    // No list: every tool; an empty list: none.
    [[], 'github__get_issue', true],
    [[[]], 'github__get_issue', false],
    // A tool by its namespaced name, and nothing else.
    [[['github__get_issue']], 'github__get_issue', true],
    [[['github__get_issue']], 'github__get_issues', false],
    // A server's name grants all of its tools, not another server's whose name it starts.
    [[['github']], 'github__create_issue', true],
    [[['github']], 'github-enterprise__create_issue', false],
    // prefix* patterns over namespaced names.
    [[['github__get_*']], 'github__get_issue', true],
    [[['github__get_*']], 'github__create_issue', false],
    [[['*']], 'docs__search', true],
    // Every list must allow it: the key's and its team's.
    [[['github'], ['github__get_*']], 'github__get_issue', true],
    [[['github'], ['github__get_*']], 'github__create_issue', false],
  ])('lists %j: %s is allowed: %s', (lists, tool, allowed) => {
    expect(new ToolPermissions(lists).allows(tool)).toBe(allowed);
  });

  it('shows a server to a key that may use any of its tools, and only then', () => {
    expect(new ToolPermissions([]).allowsAnyOf('github')).toBe(true);
    expect(new ToolPermissions([['github__get_issue']]).allowsAnyOf('github')).toBe(true);
    expect(new ToolPermissions([['git*']]).allowsAnyOf('github')).toBe(true);
    expect(new ToolPermissions([['github__get_*']]).allowsAnyOf('github')).toBe(true);
    expect(new ToolPermissions([['docs']]).allowsAnyOf('github')).toBe(false);
    expect(new ToolPermissions([['github'], ['docs']]).allowsAnyOf('github')).toBe(false);
    expect(new ToolPermissions([[]]).allowsAnyOf('github')).toBe(false);
  });
});

describe('namespaced names', () => {
  it('split at the first "__", since a server name has no "_"', () => {
    expect(namespaced('github', 'get__issue')).toBe('github__get__issue');
    expect(splitNamespaced('github__get__issue')).toEqual({ server: 'github', name: 'get__issue' });
    expect(splitNamespaced('no-separator')).toBeUndefined();
    expect(splitNamespaced('__tool')).toBeUndefined();
  });
});
