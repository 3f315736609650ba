/**
 * A schema's migrations as a service keeps them in its repository: a folder of files named
 * NNN_lower_snake.sql, applied in the order of their numbers, each once (the service records which
 * it applied, in a table of its own).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One migration file. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE_NAME = /^(\d{3})_[a-z0-9_]+\.sql$/;

/** The migrations of a folder, by version; throws on a file that is not NNN_name.sql or a version used twice. */
export function readMigrations(folder: string): Migration[] {
  const migrations = readdirSync(folder)
    .filter((name) => name.endsWith('.sql'))
    .map((name) => {
      const match = FILE_NAME.exec(name);
      if (!match) throw new Error(`migration file ${name} is not named NNN_lower_snake.sql`);
      return { version: Number(match[1]), name, sql: readFileSync(join(folder, name), 'utf8') };
    })
    .sort((a, b) => a.version - b.version);
  for (let index = 1; index < migrations.length; index += 1)
    if (migrations[index]!.version === migrations[index - 1]!.version) throw new Error(`two migrations have version ${migrations[index]!.version}`);
  return migrations;
}
