/**
 * The shape the house style asks of service code (services/<name>/src and the console's source;
 * tests, generated code and build output aside): few files over 300 lines and few functions whose
 * own body (its nested functions' bodies left out) is over 60 lines, each of them saying in its
 * opening comment, in a sentence that begins "One piece:", why it is one; and, in services and
 * packages alike, no function with six or more positional parameters (an options object reads
 * better than a sixth argument). The bounds are the counts the house held before it grew: 15
 * files and 11 functions. Read with TypeScript's own parser, so a function is what the compiler
 * says it is.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 60;
const MAX_LONG_FILES = 15;
const MAX_LONG_FUNCTIONS = 11;
const MAX_POSITIONAL_PARAMETERS = 5;
const ONE_PIECE = /One piece: \S/;

/** The TypeScript sources under `folder`, tests, declarations, generated code and build output aside. */
function sources(folder) {
  const found = [];
  const walk = (directory) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'dist', 'generated'].includes(entry.name)) walk(path);
      } else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$|\.d\.ts$/.test(entry.name)) found.push(path);
    }
  };
  walk(folder);
  return found;
}

/** Every source folder of a service (its src, and the console's). */
function serviceFolders() {
  return readdirSync(join(ROOT, 'services'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => ['src', 'console/src'].map((folder) => join(ROOT, 'services', entry.name, folder)))
    .filter((folder) => existsSync(folder));
}

function parsed(path) {
  const text = readFileSync(path, 'utf8');
  return { text, file: ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS) };
}

/** The comments before a file's first statement (TypeScript reads past a shebang). */
function openingComment(text) {
  return (ts.getLeadingCommentRanges(text, 0) ?? []).map((range) => text.slice(range.pos, range.end)).join('\n');
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** A function's name as a reader finds it: its own, or the variable or property it is assigned to. */
function nameOf(node) {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText();
  return '(anonymous)';
}

/** The comment a function is introduced by: its own, or its variable statement's or property's. */
function commentOf(node, text) {
  let holder = node;
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    holder = node.parent;
    if (ts.isVariableDeclaration(holder)) holder = holder.parent.parent;
  }
  return (ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? []).map((range) => text.slice(range.pos, range.end)).join('\n');
}

/** The lines of a function's block body, less the block bodies of the functions inside it. */
function ownBodyLines(node, file) {
  const body = node.body;
  if (!body || !ts.isBlock(body)) return 0;
  const line = (position) => file.getLineAndCharacterOfPosition(position).line;
  let lines = line(body.end) - line(body.getStart(file)) - 1;
  const visit = (child) => {
    if (isFunction(child) && child.body && ts.isBlock(child.body)) {
      lines -= line(child.body.end) - line(child.body.getStart(file)) + 1;
      return;
    }
    ts.forEachChild(child, visit);
  };
  ts.forEachChild(body, visit);
  return lines;
}

/** Every function of a file, with where it is. */
function functionsOf(path, file) {
  const found = [];
  const visit = (node) => {
    if (isFunction(node))
      found.push({ node, where: `${relative(ROOT, path)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1} ${nameOf(node)}` });
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('the shape of the code', () => {
  const serviceFiles = serviceFolders().flatMap(sources);

  it('finds the service sources it measures', () => {
    expect(serviceFiles.length).toBeGreaterThan(100);
    expect(serviceFiles.some((path) => path.endsWith(join('services', 'edge', 'src', 'app.ts')))).toBe(true);
  });

  it(`has at most ${MAX_LONG_FILES} service files over ${MAX_FILE_LINES} lines, each saying why it is one piece`, () => {
    const long = serviceFiles
      .map((path) => ({ path, ...parsed(path) }))
      .filter(({ text }) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0) > MAX_FILE_LINES);
    expect(long.length, long.map(({ path }) => relative(ROOT, path)).join('\n')).toBeLessThanOrEqual(MAX_LONG_FILES);
    const unexplained = long.filter(({ text }) => !ONE_PIECE.test(openingComment(text))).map(({ path }) => relative(ROOT, path));
    expect(unexplained, 'files over 300 lines whose opening comment has no "One piece: ..." sentence').toEqual([]);
  });

  it(`has at most ${MAX_LONG_FUNCTIONS} service functions whose own body is over ${MAX_FUNCTION_LINES} lines, each saying why it is one piece`, () => {
    const long = serviceFiles.flatMap((path) => {
      const { text, file } = parsed(path);
      return functionsOf(path, file)
        .filter(({ node }) => ownBodyLines(node, file) > MAX_FUNCTION_LINES)
        .map(({ node, where }) => ({ where, explained: ONE_PIECE.test(commentOf(node, text)) }));
    });
    expect(long.length, long.map(({ where }) => where).join('\n')).toBeLessThanOrEqual(MAX_LONG_FUNCTIONS);
    expect(long.filter(({ explained }) => !explained).map(({ where }) => where)).toEqual([]);
  });

  it(`has no function with more than ${MAX_POSITIONAL_PARAMETERS} positional parameters in services or packages`, () => {
    const packageFolders = readdirSync(join(ROOT, 'packages'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(ROOT, 'packages', entry.name, 'src'));
    const crowded = [...serviceFiles, ...packageFolders.flatMap((folder) => sources(folder))].flatMap((path) => {
      const { file } = parsed(path);
      return functionsOf(path, file)
        .filter(({ node }) => node.parameters.filter((parameter) => parameter.name.getText() !== 'this').length > MAX_POSITIONAL_PARAMETERS)
        .map(({ where }) => where);
    });
    expect(crowded).toEqual([]);
  });

  it('tells an own body from its nested functions and reads a one-piece sentence where it is', () => {
    const body = Array.from({ length: 70 }, (_, index) => `    const v${index} = ${index};`).join('\n');
    const text = `/** One piece: a test. */\nfunction outer() {\n  const inner = () => {\n${body}\n  };\n  return inner;\n}\n`;
    const file = ts.createSourceFile('probe.ts', text, ts.ScriptTarget.Latest, true);
    const [outer, inner] = functionsOf(join(ROOT, 'probe.ts'), file);
    expect(ownBodyLines(outer.node, file)).toBe(1);
    expect(ownBodyLines(inner.node, file)).toBe(70);
    expect(ONE_PIECE.test(commentOf(outer.node, text))).toBe(true);
    expect(ONE_PIECE.test(commentOf(inner.node, text))).toBe(false);
    expect(ONE_PIECE.test(openingComment(`#!/usr/bin/env node\n/**\n * One piece: why.\n */\nimport x from 'x';\n`))).toBe(true);
  });
});
