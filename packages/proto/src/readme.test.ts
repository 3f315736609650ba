/**
 * proto/README.md against proto/: every contract file is in the README's table with the package
 * it declares, and every file the table names exists, so the two cannot drift apart.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PROTO = fileURLToPath(new URL('../../../proto/', import.meta.url));

function protoFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? protoFiles(join(folder, entry.name)) : entry.name.endsWith('.proto') ? [relative(PROTO, join(folder, entry.name))] : [],
  );
}

describe('proto/README.md', () => {
  it('lists every contract file with its package, and only files that exist', () => {
    const readme = readFileSync(join(PROTO, 'README.md'), 'utf8');
    const rows = new Map([...readme.matchAll(/^\| `([^`]+\.proto)` \| `([^`]+)` \|/gm)].map((match) => [match[1]!, match[2]!]));
    const files = protoFiles(PROTO).sort();
    expect(files.length).toBeGreaterThan(5);
    expect([...rows.keys()].sort()).toEqual(files);
    for (const file of files) {
      const declared = /^package ([\w.]+);/m.exec(readFileSync(join(PROTO, file), 'utf8'))?.[1];
      expect(rows.get(file), file).toBe(declared);
    }
  });
});
