/**
 * Installs and checks the adapter's schema. Idempotent and safe to run from several processes
 * at once: everything happens in one transaction under a transaction-scoped advisory lock.
 *
 * Called from the preset's `postmigrate` hook (every Graphile `migrate()`: each `run()` and
 * `makeWorkerUtils()` start) and by the adapter's own entry points, so the AFTER DELETE trigger
 * is back in place even after a Graphile migration recreated `_private_jobs`.
 */
import { BackendError } from '../../src/errors.js';
import type { SqlFileName } from './generated/sql.js';
import { translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/**
 * Graphile Worker schema levels this adapter was tested against. The adapter reads and writes
 * `_private_jobs` (by primary key only), which Graphile documents as private and free to change
 * in a minor version, so an unknown level is refused rather than guessed at.
 * 20 is graphile-worker 0.18.0's latest migration (sql/000020.sql).
 */
export const SUPPORTED_GRAPHILE_MIGRATIONS: readonly number[] = [20];

/** The adapter's own migrations, in order. Append only; never edit a shipped one. */
const MIGRATIONS: readonly { id: number; file: SqlFileName }[] = [
  { id: 1, file: 'migration-0001-ledger' },
  { id: 2, file: 'migration-0002-fingerprint-state-index' },
  { id: 3, file: 'migration-0003-retention' },
  { id: 4, file: 'migration-0004-retention-in-record-job' },
  { id: 5, file: 'migration-0005-request-token' },
];

/** Refuses a Graphile Worker schema the adapter was not tested against, with a message saying what to do. */
export async function checkGraphileMigration(client: PgClientLike, sql: GraphileWorkerSql): Promise<number> {
  let level: number | null;
  try {
    const { rows } = await client.query<{ id: number | null }>(sql.text('read-graphile-migration'));
    level = rows[0]?.id ?? null;
  } catch (error) {
    // 42P01 here: Graphile Worker was never migrated in that schema ("not installed").
    throw translatePgError(error, { operation: `checking Graphile Worker's schema "${sql.names.workerSchema}"`, rolledBack: true });
  }
  if (level === null || !SUPPORTED_GRAPHILE_MIGRATIONS.includes(level)) {
    throw new BackendError(
      'graphile-worker',
      `Graphile Worker schema "${sql.names.workerSchema}" is at migration ${level ?? 'none'}, which ojs-unique/graphile-worker was not tested against ` +
        `(supported: ${SUPPORTED_GRAPHILE_MIGRATIONS.join(', ')}, i.e. graphile-worker 0.18.x). Refusing to touch its private tables; ` +
        'use a supported graphile-worker version or upgrade ojs-unique.',
      { written: false },
    );
  }
  return level;
}

/**
 * Creates or upgrades the adapter's schema and (re)installs its functions and trigger.
 * `client` must not be inside a transaction: this opens and commits its own.
 */
export async function installUniqueJobsSchema(client: PgClientLike, sql: GraphileWorkerSql): Promise<void> {
  await checkGraphileMigration(client, sql);
  const { workerSchema: graphileSchema, uniqueSchema } = sql.names;
  await client.query('begin');
  try {
    await client.query(sql.text('install-lock'));
    await client.query(sql.text('install-bootstrap'));
    const { rows } = await client.query<{ id: number }>(sql.text('read-migrations'));
    const applied = new Set(rows.map((row) => row.id));
    // A ledger migrated by a newer ojs-unique: reinstalling this version's functions over it would
    // put back code its migrations replaced (after 0004, an older record_job would stop recording
    // retention, with no error anywhere). Refuse, as Graphile refuses an unknown schema level.
    // Versions before this check cannot refuse: docs/graphile-worker.md, "Upgrading".
    const newest = Math.max(0, ...applied);
    const known = MIGRATIONS[MIGRATIONS.length - 1]!.id;
    if (newest > known) {
      throw new BackendError(
        'graphile-worker',
        `schema "${uniqueSchema}" is at ojs-unique migration ${newest}, newer than this ojs-unique knows (${known}): a newer version installed it. ` +
          'Refusing to reinstall older functions over it; upgrade ojs-unique in this process.',
        { written: false },
      );
    }
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.id)) continue;
      await client.query(sql.text(migration.file));
      await client.query(sql.text('record-migration'), [migration.id]);
    }
    const bound = await client.query<{ value: string }>(sql.text('bind-graphile-schema'), [graphileSchema]);
    const boundTo = bound.rows[0]?.value;
    if (boundTo !== graphileSchema) {
      throw new BackendError(
        'graphile-worker',
        `schema "${uniqueSchema}" already serves Graphile Worker schema "${boundTo}", not "${graphileSchema}": give each Graphile Worker schema its own ojs-unique schema`,
        { written: false },
      );
    }
    await client.query(sql.text('install-functions'));
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw translatePgError(error, { operation: 'installing the ojs-unique schema', rolledBack: true });
  }
}
