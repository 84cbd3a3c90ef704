/**
 * Installs and upgrades the adapter's schema. Idempotent and safe to run from several processes
 * at once: everything happens in one transaction under a transaction-scoped advisory lock.
 *
 * Called from the preset's `postmigrate` hook (every Graphile `migrate()`: each `run()` and
 * `makeWorkerUtils()` start) and by `createGraphileWorkerBackend`, so the AFTER DELETE trigger
 * is back in place even after a Graphile migration recreated `_private_jobs`.
 *
 * A start-up that finds everything current (graphile-worker-install-state.ts) writes nothing and
 * takes no lock, so a role without CREATE can start; only an install or upgrade needs one that may.
 *
 * Versions: the functions of one package are schema version {@link SCHEMA_VERSION}, recorded in
 * the schema when installed. They are installed only over an older version (or right after a
 * migration), and a schema holding a newer version is refused: an older process that restarts
 * must not put its older bodies back over a newer package's. A schema a pre-release build
 * installed is refused too, saying how to drop it and install again: no release upgrades one.
 */
import type { SqlFileName } from './generated/sql.js';
import { translatePgError } from './graphile-worker-errors.js';
import {
  boundElsewhereError,
  judgeInstall,
  newerSchemaError,
  preReleaseSchemaError,
  readInstallState,
  readInstalledVersions,
  UniqueSchemaVersionError,
  type InstallState,
} from './graphile-worker-install-state.js';
import { noteReliancesMet, unmetGraphileReliances, unmetReliancesError, type UnmetReliance } from './graphile-worker-host.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/**
 * The version of the adapter's schema this package installs. Bump it with every change to
 * sql/functions/*.sql (other than a comment line) and with every new migration; the schema
 * version test pins a digest of those files per version.
 */
export const SCHEMA_VERSION = 1;

/** The adapter's own migrations, in order. Append only; never edit a released one. */
export const MIGRATIONS: readonly { id: number; file: SqlFileName }[] = [{ id: 1, file: 'migration-0001-schema' }];

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
 * @throws UniqueSchemaVersionError (`preRelease`) when a pre-release build installed the schema;
 *   BackendError when it holds a newer schema version (or migration) than this package's, or
 *   serves another Graphile Worker schema. Nothing is changed then.
 */
export async function installUniqueJobsSchema(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  internals: InstallInternals = {},
): Promise<InstallResult> {
  // Two processes starting on a fresh database at once (a gateway and a worker) were seen to meet
  // in CREATE SCHEMA (SQLSTATE 23505 on pg_namespace) although the install lock is taken first;
  // as Graphile Worker's own migrate does for its schema, the loser waits and starts over, and
  // then finds what the other installed.
  for (let attempt = 1; ; attempt++) {
    try {
      return await installOnce(client, sql, internals);
    } catch (error) {
      if (attempt >= INSTALL_ATTEMPTS || !lostCreateRace(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
    }
  }
}

const INSTALL_ATTEMPTS = 3;

/** A CREATE that met the same object created by a concurrent transaction (23505 on a catalog index, 42P06, 42P07). */
function lostCreateRace(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown; constraint?: unknown } } | null)?.cause;
  const code = cause?.code;
  return (
    (code === '23505' && typeof cause?.constraint === 'string' && cause.constraint.startsWith('pg_')) ||
    code === '42P06' ||
    code === '42P07'
  );
}

async function installOnce(client: PgClientLike, sql: GraphileWorkerSql, internals: InstallInternals): Promise<InstallResult> {
  const version = internals.schemaVersion ?? SCHEMA_VERSION;
  const { workerSchema: graphileSchema, uniqueSchema } = sql.names;
  let unmet: UnmetReliance[];
  try {
    unmet = await unmetGraphileReliances(client, sql);
  } catch (error) {
    throw translatePgError(error, { operation: `checking Graphile Worker's schema "${graphileSchema}"`, rolledBack: true });
  }
  if (unmet.length > 0) return { installed: false, unmet };
  const expected = { version, migrations: MIGRATIONS.map((migration) => migration.id) };
  // Read first, creating nothing: a current schema needs no write, no lock and no CREATE.
  let state: InstallState;
  try {
    state = await readInstallState(client, sql);
  } catch (error) {
    throw translatePgError(error, { operation: `reading the ojs-unique schema "${uniqueSchema}"`, rolledBack: true });
  }
  const verdict = judgeInstall(state, sql, expected);
  if (verdict.kind === 'refused') throw verdict.error;
  if (verdict.kind === 'current') {
    noteReliancesMet(client, sql);
    return { installed: true, version, functions: false };
  }
  await client.query('begin');
  try {
    await client.query(sql.text('install-lock'));
    await client.query(sql.text('install-bootstrap'));
    const installed = await readInstalledVersions(client, sql);
    // Again under the lock: another package may have installed since the read above.
    const refusal = preReleaseSchemaError(sql, installed, version) ?? newerSchemaError(uniqueSchema, installed, expected);
    if (refusal) throw refusal;
    const applied = new Set(installed.migrations);
    const stored = installed.version ?? 0;
    let migrated = false;
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.id)) continue;
      await client.query(sql.text(migration.file));
      await client.query(sql.text('record-migration'), [migration.id]);
      migrated = true;
    }
    const bound = await client.query<{ value: string }>(sql.text('bind-graphile-schema'), [graphileSchema]);
    const boundElsewhere = boundElsewhereError(sql, bound.rows[0]?.value);
    if (boundElsewhere) throw boundElsewhere;
    // A migration may drop or alter what a body uses, so the bodies are installed again after one
    // even at the same version.
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
    if ((error as { code?: unknown } | null)?.code === '42501') {
      // A runtime role without CREATE met a schema that needs installing: say what, and how.
      throw new UniqueSchemaVersionError(sql, {
        found: state.version,
        required: version,
        why: `${verdict.why}, and this role may not install it (SQLSTATE 42501: ${(error as Error).message})`,
        cause: error,
      });
    }
    throw translatePgError(error, { operation: 'installing the ojs-unique schema', rolledBack: true });
  }
}

/**
 * The start-up of `createGraphileWorkerBackend({ migrate: false })`: checks, creating nothing,
 * that Graphile Worker's schema has what the adapter relies on and that the adapter's schema is
 * installed at this package's version with its trigger. Reads the catalogs and the adapter's
 * `migrations` and `settings` tables only, so a role with USAGE and DML rights passes.
 *
 * @throws UniqueSchemaVersionError when the adapter's schema is missing, older, without its
 *   trigger, or installed by a pre-release build (saying how to install it, or to reinstall it);
 *   BackendError when Graphile's schema lacks a reliance, or the adapter's schema is newer or
 *   serves another Graphile Worker schema.
 */
export async function checkUniqueJobsSchema(client: PgClientLike, sql: GraphileWorkerSql, internals: InstallInternals = {}): Promise<void> {
  const version = internals.schemaVersion ?? SCHEMA_VERSION;
  let unmet: UnmetReliance[];
  let state: InstallState;
  try {
    unmet = await unmetGraphileReliances(client, sql);
    state = await readInstallState(client, sql);
  } catch (error) {
    throw translatePgError(error, { operation: 'checking the schemas (migrate: false)', rolledBack: true });
  }
  if (unmet.length > 0) throw unmetReliancesError(sql, unmet);
  const verdict = judgeInstall(state, sql, { version, migrations: MIGRATIONS.map((migration) => migration.id) });
  if (verdict.kind === 'refused') throw verdict.error;
  if (verdict.kind === 'install') throw new UniqueSchemaVersionError(sql, { found: state.version, required: version, why: verdict.why });
  noteReliancesMet(client, sql);
}
