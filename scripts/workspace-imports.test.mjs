/**
 * Every package of the workspace declares what it imports: its code imports only its own
 * dependencies, and its tests its own too, with the workspace's test tools (vitest, ws, ...: the
 * root package.json's devDependencies) beside them, but never another package of the workspace
 * that it does not declare (that one would resolve only through the root's hoisting). And no
 * package depends on one that depends back on it, dev dependencies included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));
const ROOT_DEV = new Set(Object.keys(readJson(join(ROOT, 'package.json')).devDependencies ?? {}));
const BUILTIN = new Set(builtinModules);

/** Every package under packages/ and services/: its folder, name and declared dependencies. */
const PACKAGES = ['packages', 'services'].flatMap((group) =>
  readdirSync(join(ROOT, group)).flatMap((name) => {
    const folder = join(ROOT, group, name);
    const manifest = (() => {
      try {
        return readJson(join(folder, 'package.json'));
      } catch {
        return undefined;
      }
    })();
    if (!manifest) return [];
    const declared = new Set([manifest.name, ...Object.keys({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies })]);
    return [{ folder, name: manifest.name, declared }];
  }),
);

/** The package a bare specifier names (`@scope/name/sub` -> `@scope/name`), or undefined for a path or a built-in. */
function packageOf(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('node:')) return undefined;
  const name = specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
  return BUILTIN.has(name) ? undefined : name;
}

/** Each import of a TypeScript file under `folder`'s src/: the file, whether it is a test, the package named. */
function importsOf(folder) {
  const source = join(folder, 'src');
  return readdirSync(source, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.includes('generated'))
    .flatMap((file) => {
      const text = readFileSync(join(source, file), 'utf8');
      const test = /\.test\.ts$/.test(file) || file.split('/').includes('testing');
      return [...text.matchAll(/^\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm)]
        .map((match) => packageOf(match[1] ?? match[2]))
        .filter((name) => name !== undefined)
        .map((name) => ({ file: relative(ROOT, join(source, file)), test, name }));
    });
}

describe("the workspace's packages", () => {
  it('declare every package they import; tests take only outside test tools from the root', () => {
    const undeclared = PACKAGES.flatMap(({ folder, declared }) =>
      importsOf(folder).filter(({ test, name }) => !declared.has(name) && !(test && ROOT_DEV.has(name) && !name.startsWith('@gateway/'))),
    );
    // A scan that finds nothing proves nothing: auth's code imports @gateway/grpc, its tests vitest.
    const seen = new Set(importsOf(join(ROOT, 'services', 'auth')).map(({ name }) => name));
    expect([...seen]).toEqual(expect.arrayContaining(['@gateway/grpc', 'vitest']));
    expect(undeclared.map(({ file, name }) => `${file} imports ${name}`)).toEqual([]);
  });

  it('depend on no package that depends back on them', () => {
    const byName = new Map(PACKAGES.map((entry) => [entry.name, [...entry.declared].filter((name) => name !== entry.name && name.startsWith('@gateway/'))]));
    const loops = [...byName].flatMap(([name, dependencies]) =>
      dependencies.filter((dependency) => byName.get(dependency)?.includes(name)).map((dependency) => `${name} <-> ${dependency}`),
    );
    expect(loops).toEqual([]);
  });
});
