/**
 * The OJS gateway's tables on Graphile Worker (server/sql/gateway-migration-*.sql), installed by
 * the gateway beside the adapter's ledger, in the adapter's schema, when a gateway store starts:
 * a library user who never runs the gateway never gets them. Their version is the settings row
 * `gateway_version` (every migration up to it applied), checked by every gateway process: a
 * database a newer gateway installed is refused rather than served with the wrong tables.
 *
 * Before installing, the gateway checks that Graphile Worker's schema has what its worker
 * protocol relies on (GATEWAY_GRAPHILE_RELIANCES, graphile-worker-host.ts) and refuses to start,
 * naming each object, when it does not.
 */
import { BackendError } from '../src/errors.js';
import { translatePgError } from '../adapters/graphile-worker/graphile-worker-errors.js';
import { describeUnmet, GATEWAY_GRAPHILE_RELIANCES, unmetGraphileReliances } from '../adapters/graphile-worker/graphile-worker-host.js';
import type { PgClientLike } from '../adapters/graphile-worker/graphile-worker-pg.js';
import type { GraphileWorkerSql } from '../adapters/graphile-worker/graphile-worker-sql.js';
import type { GatewaySqlFileName } from './graphile-worker-gateway-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';

/** The gateway's migrations, in order: the version is the last one's. Append only once released. */
const GATEWAY_MIGRATIONS: readonly GatewaySqlFileName[] = ['gateway-migration-0001-schema'];

export const GATEWAY_SCHEMA_VERSION = GATEWAY_MIGRATIONS.length;

/**
 * Installs or upgrades the gateway's tables; writes nothing (and takes no lock) when they are
 * current. `client` must not be inside a transaction, and the adapter's schema must be installed.
 * @throws BackendError when Graphile's schema lacks a reliance of the gateway, or the tables are
 *   at a newer gateway version than this package's. Nothing is changed then.
 */
export async function installGatewaySchema(
  client: PgClientLike,
  adapterSql: GraphileWorkerSql,
  version: number = GATEWAY_SCHEMA_VERSION,
): Promise<void> {
  const sql = GatewaySql.for(adapterSql.names);
  const { workerSchema, uniqueSchema } = sql.names;
  let found: number | null;
  try {
    const unmet = await unmetGraphileReliances(client, adapterSql, GATEWAY_GRAPHILE_RELIANCES);
    if (unmet.length > 0) {
      throw new BackendError(
        'graphile-worker',
        `Graphile Worker's schema "${workerSchema}" lacks what the OJS gateway's worker protocol relies on: ` +
          `${unmet.map(describeUnmet).join('; ')}. This graphile-worker version changed them: use an ojs-unique version that supports it`,
        { written: false },
      );
    }
    found = await readVersion(client, sql);
  } catch (error) {
    if (error instanceof BackendError) throw error;
    throw translatePgError(error, { operation: `reading the OJS gateway's tables in "${uniqueSchema}"`, rolledBack: true });
  }
  const refusal = newerError(uniqueSchema, found, version);
  if (refusal) throw refusal;
  if (found === version) return;
  await client.query('begin');
  try {
    await client.query(sql.text('gateway-install-lock'));
    // Again under the lock: another process may have installed since the read above.
    const locked = await readVersion(client, sql);
    const lockedRefusal = newerError(uniqueSchema, locked, version);
    if (lockedRefusal) throw lockedRefusal;
    for (const migration of GATEWAY_MIGRATIONS.slice(locked ?? 0, version)) await client.query(sql.text(migration));
    await client.query(sql.text('gateway-record-schema-version'), [version]);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    if (error instanceof BackendError) throw error;
    throw translatePgError(error, { operation: "installing the OJS gateway's tables", rolledBack: true });
  }
}

async function readVersion(client: PgClientLike, sql: GatewaySql): Promise<number | null> {
  return (await client.query<{ version: number | null }>(sql.text('gateway-read-schema-version'))).rows[0]?.version ?? null;
}

function newerError(uniqueSchema: string, found: number | null, version: number): BackendError | null {
  if (found === null || found <= version) return null;
  return new BackendError(
    'graphile-worker',
    `the database holds the OJS gateway's tables at gateway schema version ${found} (schema "${uniqueSchema}"), newer than this ` +
      `package's ${version}: upgrade the ojs-unique package of this gateway`,
    { written: false },
  );
}
