/**
 * `runUniqueJobsMigrations`: installing or upgrading as its own step, for a deploy pipeline that
 * migrates with one role and runs the application with another. It does what the entry points do
 * at start-up by default: Graphile Worker's own migrations, then the adapter's schema (its
 * migrations, functions and trigger). Once both are current, every entry point starts without
 * creating anything (see "Separate install and runtime roles" in docs/graphile-worker.md).
 *
 * ```ts
 * await runUniqueJobsMigrations({ connectionString: process.env.MIGRATION_DATABASE_URL });
 * ```
 * The CLI form is `ojs-unique migrate --database-url <url>`.
 */
import { userInfo } from 'node:os';
import type { Logger } from 'graphile-worker';
import { translatePgError } from './graphile-worker-errors.js';
import { unmetReliancesError } from './graphile-worker-host.js';
import { DEFAULT_CONNECTION_TIMEOUT_MS, makeOwnPool, withDefaultUser, type PgPoolLike } from './graphile-worker-pg.js';
import { installUniqueJobsSchema } from './graphile-worker-schema.js';
import { DEFAULT_GRAPHILE_SCHEMA, DEFAULT_UNIQUE_SCHEMA, GraphileWorkerSql, type SchemaNames } from './graphile-worker-sql.js';

export interface UniqueJobsMigrationOptions {
  /** A `pg.Pool` you own (left open). Give this or `connectionString`. */
  pgPool?: PgPoolLike;
  /** A connection string for a pool of one connection, ended before this resolves. */
  connectionString?: string;
  /** Graphile Worker's schema. (Default: `graphile_worker`.) */
  workerSchema?: string;
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /** Graphile Worker's logger, for its migrations. (Default: Graphile's.) */
  logger?: Logger;
  /** How long getting a connection from the pool made from `connectionString` may take. (Default: 10000.) */
  connectionTimeoutMillis?: number;
}

export interface UniqueJobsMigrationResult {
  schemas: SchemaNames;
  /** The adapter's schema version now installed (this package's). */
  version: number;
  /** Whether this call (re)installed the adapter's functions (false: they were already current). */
  functions: boolean;
}

/** The caller's pool, or one of one connection from `connectionString` (the caller ends it when it did not give one). @internal */
export async function migrationPool(options: UniqueJobsMigrationOptions): Promise<PgPoolLike> {
  return (
    options.pgPool ??
    makeOwnPool(
      withDefaultUser(options.connectionString!, () => userInfo().username),
      1,
      options.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    )
  );
}

/**
 * Runs Graphile Worker's migrations, then installs or upgrades the adapter's schema. Idempotent,
 * safe to run from several processes at once. The role needs what installing needs: CREATE on the
 * database (for new schemas) and ownership of, or CREATE on, both schemas.
 *
 * @throws InvalidJobInputError for a schema name the adapter refuses, before connecting.
 * @throws BackendError when Graphile Worker's schema lacks something the adapter relies on, the
 *   adapter's schema is newer than this package's or serves another Graphile Worker schema, or the
 *   database refuses (SQLSTATE and `cause`).
 */
export async function runUniqueJobsMigrations(options: UniqueJobsMigrationOptions): Promise<UniqueJobsMigrationResult> {
  if (!options.pgPool === !options.connectionString)
    throw new TypeError('runUniqueJobsMigrations: give exactly one of pgPool or connectionString');
  const sql = new GraphileWorkerSql({
    workerSchema: options.workerSchema ?? DEFAULT_GRAPHILE_SCHEMA,
    uniqueSchema: options.uniqueSchema ?? DEFAULT_UNIQUE_SCHEMA,
  });
  const pool = await migrationPool(options);
  try {
    try {
      const { runMigrations } = await import('graphile-worker');
      await runMigrations({
        pgPool: pool as never,
        schema: sql.names.workerSchema,
        ...(options.logger ? { logger: options.logger } : {}),
      });
    } catch (error) {
      throw translatePgError(error, { operation: `migrating Graphile Worker's schema "${sql.names.workerSchema}"`, rolledBack: true });
    }
    let client;
    try {
      client = await pool.connect();
    } catch (error) {
      throw translatePgError(error, { operation: 'runUniqueJobsMigrations (connecting)', rolledBack: true });
    }
    try {
      const result = await installUniqueJobsSchema(client, sql);
      if (!result.installed) throw unmetReliancesError(sql, result.unmet);
      return { schemas: sql.names, version: result.version, functions: result.functions };
    } finally {
      client.release();
    }
  } finally {
    if (!options.pgPool) await pool.end();
  }
}
