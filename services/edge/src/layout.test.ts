import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCE = fileURLToPath(new URL('.', import.meta.url));

/** The edge's source files (tests aside) and the files of the edge each imports. */
function importGraph(): Map<string, string[]> {
  const files: string[] = [];
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.test.ts')) files.push(path);
    }
  };
  walk(SOURCE);
  return new Map(
    files.map((file) => [
      relative(SOURCE, file),
      [...readFileSync(file, 'utf8').matchAll(/from '(\.[^']+)'/g)].map((match) =>
        relative(SOURCE, normalize(join(dirname(file), match[1]!.replace(/\.js$/, '.ts')))),
      ),
    ]),
  );
}

describe("the edge's layout", () => {
  it('has no import cycle: the app wires the routes, the routes and their parts never import the app', () => {
    const graph = importGraph();
    expect(graph.get('routes/api/completion-routes.ts')).toBeDefined();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (path.includes(file)) {
        cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
        return;
      }
      if (path.length > 40) return;
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it("imports between its folders run one way: no folder imports one that imports it back (RequestError and a wire's error shape sit below wire/ and completions/)", () => {
    const part = (file: string) => (file.includes(sep) ? `${file.split(sep)[0]}/` : file);
    const arrows = new Set<string>();
    for (const [file, imports] of importGraph())
      for (const imported of imports) if (part(file) !== part(imported)) arrows.add(`${part(file)} -> ${part(imported)}`);
    expect(arrows).toContain('completions/ -> auth/');
    expect([...arrows].filter((arrow) => arrows.has(arrow.split(' -> ').reverse().join(' -> ')))).toEqual([]);
  });
});
