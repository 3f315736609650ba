import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCE = fileURLToPath(new URL('.', import.meta.url));

/** Auth's source files (tests aside), each with the files of auth it imports, statically or by import(). */
function importGraph(): Map<string, string[]> {
  const files = readdirSync(SOURCE, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
  const imports = (file: string) =>
    [...readFileSync(join(SOURCE, file), 'utf8').matchAll(/(?:from |import\()'(\.[^']+)'/g)].map((match) =>
      normalize(join(dirname(file), match[1]!.replace(/\.js$/, '.ts'))),
    );
  return new Map(files.map((file) => [file, imports(file)]));
}

/** The part of src a file belongs to: its folder (`keys/`), or the file itself at the top. */
function part(file: string): string {
  const [first, ...rest] = file.split(sep);
  return rest.length > 0 ? `${first}/` : first!;
}

/** Every pair of parts with an import from the first to the second, as `a -> b`. */
function partArrows(): Set<string> {
  const arrows = new Set<string>();
  for (const [file, imports] of importGraph()) {
    for (const imported of imports) if (part(file) !== part(imported)) arrows.add(`${part(file)} -> ${part(imported)}`);
  }
  return arrows;
}

describe("auth's layout", () => {
  it('imports between its folders run one way: no folder imports one that imports it back', () => {
    const arrows = partArrows();
    expect(arrows).toContain('keys/ -> shared/');
    const twoWay = [...arrows].filter((arrow) => {
      const [from, to] = arrow.split(' -> ');
      return arrows.has(`${to} -> ${from}`);
    });
    expect(twoWay).toEqual([]);
  });

  it('keeps what keys, teams, quota and admin access share in shared/, which imports none of them', () => {
    const arrows = [...partArrows()];
    for (const folder of ['keys/', 'teams/', 'quota/', 'admin-access/']) expect(arrows).toContain(`${folder} -> shared/`);
    expect(arrows.filter((arrow) => arrow.startsWith('shared/ ->'))).toEqual([]);
  });
});
