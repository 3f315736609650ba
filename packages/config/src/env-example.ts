/**
 * Writes a `.env.example` from config schemas: each variable as its schema declares it, its
 * `description` as the comment above it and its `default` as its value. A variable with
 * `examples` has no useful default to show (a path computed at start): it is written commented
 * out with its first example. scripts/gen-env-example.ts writes every `.env.example` with this,
 * and checks that the committed ones are what it writes.
 */
import type { TObject, TSchema } from '@sinclair/typebox';

/** The widest a comment line is written. */
const WIDTH = 100;

/** One part of a `.env.example`: a comment, then variables of a schema, then text as it is. */
export interface EnvExampleSection {
  /** Comment lines (without `# `) above the section; an empty line before it when not the first. */
  heading?: string;
  /** The schemas whose variables the section lists: each variable as the first that reads it declares it. */
  schemas?: readonly TObject[];
  /** Which variables, in this order; all of the schemas' by default. */
  variables?: readonly string[];
  /** Variables not to list (listed in an earlier section). */
  except?: ReadonlySet<string>;
  /** A value to show instead of a variable's default (what a script that reads the file uses). */
  values?: Readonly<Record<string, string>>;
  /** Text written after the variables, as it is (variables the schema does not read: provider keys). */
  text?: string;
}

/** Text as `# ` comment lines no wider than WIDTH, breaking between words. */
export function commentLines(text: string): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '#';
    for (const word of paragraph.split(' ').filter(Boolean)) {
      if (line.length > 1 && line.length + 1 + word.length > WIDTH) {
        lines.push(line);
        line = '#';
      }
      line += ` ${word}`;
    }
    lines.push(line);
  }
  return lines;
}

/** One variable's lines: its comment, then `NAME=default` (or `# NAME=example`). */
function variableLines(name: string, schema: TSchema, value: string | undefined): string[] {
  const lines = schema.description ? commentLines(schema.description) : [];
  const examples = schema.examples as unknown[] | undefined;
  if (value !== undefined) lines.push(`${name}=${value}`);
  else if (examples?.length) lines.push(`# ${name}=${String(examples[0])}`);
  else lines.push(`${name}=${schema.default === undefined ? '' : String(schema.default)}`);
  return lines;
}

/** The text of a `.env.example` made of `sections`. */
export function renderEnvExample(sections: readonly EnvExampleSection[]): string {
  const blocks = sections.map((section) => {
    const lines = section.heading === undefined ? [] : commentLines(section.heading);
    const schemas = (section.schemas ?? []).map((schema) => schema.properties as Record<string, TSchema>);
    const names = section.variables ?? [...new Set(schemas.flatMap((properties) => Object.keys(properties)))];
    for (const name of names) {
      if (section.except?.has(name)) continue;
      const schema = schemas.find((properties) => Object.hasOwn(properties, name))?.[name];
      if (!schema) throw new Error(`${name} is not a variable of the section's schemas`);
      lines.push(...variableLines(name, schema, section.values?.[name]));
    }
    if (section.text) lines.push(...section.text.trimEnd().split('\n'));
    return lines.join('\n');
  });
  return `${blocks.join('\n\n')}\n`;
}

/** The variables a schema reads that have no description: each must have its one-line comment. */
export function undescribedVariables(schema: TObject): string[] {
  return Object.entries(schema.properties as Record<string, TSchema>)
    .filter(([, property]) => !property.description)
    .map(([name]) => name);
}
