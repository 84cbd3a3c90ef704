/**
 * `ojs-unique migrate`: the schemas `ojs-unique serve --backend graphile-worker` uses, installed as
 * a step of their own (a deploy pipeline's role that may CREATE; the gateway then runs with one
 * that may not): Graphile Worker's, the adapter's (`runUniqueJobsMigrations`) and the gateway's
 * own tables (graphile-worker-gateway-schema.ts). Here so that cli/ reaches the adapter through
 * server/, as for `serve`.
 */
import {
  runUniqueJobsMigrations,
  type UniqueJobsMigrationOptions,
  type UniqueJobsMigrationResult,
} from '../adapters/graphile-worker/index.js';
import { translatePgError } from '../adapters/graphile-worker/graphile-worker-errors.js';
import { migrationPool } from '../adapters/graphile-worker/graphile-worker-migrate.js';
import { GraphileWorkerSql } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GATEWAY_SCHEMA_VERSION, installGatewaySchema } from './graphile-worker-gateway-schema.js';

export interface GatewayMigrationResult extends UniqueJobsMigrationResult {
  /** The gateway's tables' version now installed (this package's). */
  gatewayVersion: number;
}

/** `runUniqueJobsMigrations`, then the gateway's tables. Idempotent; the same options and errors. */
export async function runGatewayMigrations(options: UniqueJobsMigrationOptions): Promise<GatewayMigrationResult> {
  if (!options.pgPool === !options.connectionString)
    throw new TypeError('runGatewayMigrations: give exactly one of pgPool or connectionString');
  const pool = await migrationPool(options);
  try {
    const { connectionString: _given, ...rest } = options;
    const result = await runUniqueJobsMigrations({ ...rest, pgPool: pool });
    let client;
    try {
      client = await pool.connect();
    } catch (error) {
      throw translatePgError(error, { operation: 'runGatewayMigrations (connecting)', rolledBack: true });
    }
    try {
      await installGatewaySchema(client, GraphileWorkerSql.for(result.schemas));
    } finally {
      client.release();
    }
    return { ...result, gatewayVersion: GATEWAY_SCHEMA_VERSION };
  } finally {
    if (!options.pgPool) await pool.end();
  }
}
