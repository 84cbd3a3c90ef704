/**
 * Installs and upgrades the adapter's schema. Idempotent and safe to run from several processes
 * at once: everything happens in one transaction under a transaction-scoped advisory lock.
 *
 * Called from the preset's `postmigrate` hook (every Graphile `migrate()`: each `run()` and
 * `makeWorkerUtils()` start) and by `createGraphileWorkerBackend`, so the AFTER DELETE trigger
 * is back in place even after a Graphile migration recreated `_private_jobs`.
 *
 * Versions: the functions of one package are schema version {@link SCHEMA_VERSION}, recorded in
 * the schema when installed. They are installed only over an older version (or right after a
 * migration), and a schema holding a newer version is refused: an older process that restarts
 * must not put its older bodies back over a newer package's.
 */
import { BackendError } from '../../src/errors.js';
import type { SqlFileName } from './generated/sql.js';
import { translatePgError } from './graphile-worker-errors.js';
import { noteReliancesMet, unmetGraphileReliances, type UnmetReliance } from './graphile-worker-host.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/**
 * The version of the adapter's schema this package installs. Bump it with every change to
 * install-functions.sql (other than a comment line) and with every new migration; the schema
 * version test pins a digest of those files per version.
 */
export const SCHEMA_VERSION = 6;

/** The adapter's own migrations, in order. Append only; never edit a shipped one. */
export const MIGRATIONS: readonly { id: number; file: SqlFileName }[] = [
  { id: 1, file: 'migration-0001-ledger' },
  { id: 2, file: 'migration-0002-fingerprint-state-index' },
  { id: 3, file: 'migration-0003-retention' },
  { id: 4, file: 'migration-0004-retention-in-record-job' },
  { id: 5, file: 'migration-0005-request-token' },
  { id: 6, file: 'migration-0006-schema-version' },
  { id: 7, file: 'migration-0007-head-record' },
  { id: 8, file: 'migration-0008-policy-extensions' },
  { id: 9, file: 'migration-0009-gateway-jobs' },
];

export type InstallResult =
  /** Installed or already current; `functions` says whether this call (re)installed them. */
  | { installed: true; version: number; functions: boolean }
  /** Graphile Worker's schema lacks something the adapter relies on: nothing was touched. */
  | { installed: false; unmet: UnmetReliance[] };

/** For tests: install as a package of another schema version would. */
export interface InstallInternals {
  schemaVersion?: number;
}

/**
 * Creates or upgrades the adapter's schema, (re)installs its functions when the stored version is
 * older, and re-creates the trigger if it is missing. When Graphile Worker's schema lacks a
 * reliance (graphile-worker-host.ts) it does nothing and says so in the result, without throwing:
 * a worker must start whatever the adapter thinks of its schema.
 * `client` must not be inside a transaction: this opens and commits its own.
 *
 * @throws BackendError when the schema holds a newer schema version (or migration) than this
 *   package's, or serves another Graphile Worker schema; nothing is changed then.
 */
export async function installUniqueJobsSchema(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  internals: InstallInternals = {},
): Promise<InstallResult> {
  const version = internals.schemaVersion ?? SCHEMA_VERSION;
  const { workerSchema: graphileSchema, uniqueSchema } = sql.names;
  let unmet: UnmetReliance[];
  try {
    unmet = await unmetGraphileReliances(client, sql);
  } catch (error) {
    throw translatePgError(error, { operation: `checking Graphile Worker's schema "${graphileSchema}"`, rolledBack: true });
  }
  if (unmet.length > 0) return { installed: false, unmet };
  await client.query('begin');
  try {
    await client.query(sql.text('install-lock'));
    await client.query(sql.text('install-bootstrap'));
    const applied = new Set((await client.query<{ id: number }>(sql.text('read-migrations'))).rows.map((row) => row.id));
    const stored = (await client.query<{ version: number }>(sql.text('read-schema-version'))).rows[0]?.version ?? 0;
    const newest = Math.max(0, ...applied);
    const known = MIGRATIONS[MIGRATIONS.length - 1]!.id;
    if (stored > version || newest > known) {
      const [theirs, ours] =
        stored > version ? [`schema version ${stored}`, `schema version ${version}`] : [`migration ${newest}`, `migration ${known}`];
      throw new BackendError(
        'graphile-worker',
        `the database holds a newer ojs-unique ${theirs} (schema "${uniqueSchema}") than this package's ${ours}: upgrade the ojs-unique package. ` +
          'Nothing was installed: its older functions stay off the newer ones.',
        { written: false },
      );
    }
    let migrated = false;
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.id)) continue;
      await client.query(sql.text(migration.file));
      await client.query(sql.text('record-migration'), [migration.id]);
      migrated = true;
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
    // A migration may drop or alter what a body uses (0004 dropped a trigger function), so the
    // bodies are installed again after one even at the same version.
    const functions = stored < version || migrated;
    if (functions) {
      await client.query(sql.text('install-functions'));
      await client.query(sql.text('record-schema-version'), [version]);
    }
    await client.query(sql.text('install-trigger'));
    await client.query('commit');
    noteReliancesMet(client, sql);
    return { installed: true, version, functions };
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw translatePgError(error, { operation: 'installing the ojs-unique schema', rolledBack: true });
  }
}
