import { describe, expect, it } from 'vitest';
import { contractingStatements, readMigrations } from './migrations.js';

describe('migrations', () => {
  it('only expand the schema: none drops, renames or retypes what a previous version still running reads', () => {
    const migrations = readMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.flatMap((migration) => contractingStatements(migration.sql).map((problem) => `${migration.name}: ${problem}`))).toEqual([]);
  });

  // Each migration a rolling upgrade cannot take, and what the check says of it.
  const contracting: Array<[string, string]> = [
    ['DROP TABLE request_bodies;', 'drops what the previous version may read: DROP TABLE request_bodies'],
    ['ALTER TABLE request_log DROP COLUMN user_agent;', 'drops what the previous version may read: ALTER TABLE request_log DROP COLUMN user_agent'],
    [
      'ALTER TABLE request_log RENAME COLUMN api TO surface;',
      'renames what the previous version may read: ALTER TABLE request_log RENAME COLUMN api TO surface',
    ],
    ['ALTER TABLE request_log\n  ALTER COLUMN latency_ms TYPE bigint;', "changes a column's type: ALTER TABLE request_log ALTER COLUMN latency_ms TYPE bigint"],
    [
      'ALTER TABLE request_log ALTER COLUMN trace_id SET NOT NULL;',
      'makes a column NOT NULL that the previous version may leave empty: ALTER TABLE request_log ALTER COLUMN trace_id SET NOT NULL',
    ],
    [
      'ALTER TABLE request_log ADD COLUMN region text NOT NULL;',
      "adds a NOT NULL column without a DEFAULT (the previous version's INSERTs do not name it): ALTER TABLE request_log ADD COLUMN region text NOT NULL",
    ],
  ];

  it.each(contracting)('refuses %j', (sql, problem) => {
    expect(contractingStatements(sql)).toEqual([problem]);
  });

  it('lets through what expands, and a contracting step marked as one', () => {
    expect(
      contractingStatements(
        [
          '-- A column with a constant default: the previous version never names it.',
          "ALTER TABLE request_log ADD COLUMN region text NOT NULL DEFAULT '', ADD COLUMN zone text;",
          'CREATE INDEX request_log_region ON request_log (region); -- DROP TABLE in a comment is no statement',
          '-- contract: the previous version stopped reading user_agent in 0.9 (005 expanded)',
          'ALTER TABLE request_log DROP COLUMN user_agent;',
        ].join('\n'),
      ),
    ).toEqual([]);
  });
});
