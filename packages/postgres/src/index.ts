/**
 * What the services that keep their data in PostgreSQL (the request log, the batch service) share:
 * their schema's migrations read from a folder of NNN_name.sql files, and a transaction on one
 * connection of a pool (with an advisory lock held for it, when asked).
 */
export { type Migration, readMigrations } from './migrations.js';
export { inTransaction } from './transaction.js';
