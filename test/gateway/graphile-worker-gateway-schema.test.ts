/**
 * The gateway's own tables on Graphile Worker (server/graphile-worker-gateway-schema.ts): installed
 * by the gateway beside the adapter's schema, versioned, and refused when Graphile Worker's schema
 * lacks what the gateway's worker protocol relies on.
 */
import { expect } from 'chai';
import { makeUniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { BackendError } from '../../src/errors.js';
import { GATEWAY_SCHEMA_VERSION, installGatewaySchema } from '../../server/graphile-worker-gateway-schema.js';
import { databaseUrl, makeSubjectPool } from '../conformance/subjects/graphile-worker.js';
import { RUN_SALT } from '../run-salt.js';

describe('Graphile Worker: the gateway installs its own tables', function () {
  this.timeout(20_000);
  const schemas = { workerSchema: `gwt_${RUN_SALT}_gwschema_gw`, uniqueSchema: `gwt_${RUN_SALT}_gwschema_ou` };
  const pool = makeSubjectPool(databaseUrl(), 4);
  const sql = GraphileWorkerSql.for(schemas);
  const install = async (version?: number) => {
    const client = await pool.connect();
    try {
      await installGatewaySchema(client, sql, version);
    } finally {
      client.release();
    }
  };
  const gatewayTables = async () =>
    (
      await pool.query<{ name: string }>(
        `select tablename as name from pg_tables where schemaname = $1 and tablename like 'gateway%' order by 1`,
        [schemas.uniqueSchema],
      )
    ).rows.map((row) => row.name);
  const storedVersion = async () =>
    (await pool.query<{ value: string }>(`select value from "${schemas.uniqueSchema}".settings where name = 'gateway_version'`)).rows[0]
      ?.value;

  before(async () => {
    await pool.query(`drop schema if exists "${schemas.uniqueSchema}" cascade`);
    const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: schemas.workerSchema, uniqueSchema: schemas.uniqueSchema });
    await utils.release();
  });
  after(async () => {
    await pool.end();
  });

  it('a library install has none of the gateway’s tables; the gateway installs them once, recording its version', async () => {
    expect(await gatewayTables()).to.deep.equal([]);
    await Promise.all([install(), install(), install()]);
    expect(await gatewayTables()).to.deep.equal([
      'gateway_crons',
      'gateway_idempotency',
      'gateway_jobs',
      'gateway_queues',
      'gateway_workers',
      'gateway_workflow_jobs',
      'gateway_workflows',
    ]);
    expect(await storedVersion()).to.equal(String(GATEWAY_SCHEMA_VERSION));
    await install();
    expect(await storedVersion()).to.equal(String(GATEWAY_SCHEMA_VERSION));
  });

  it('refuses tables a newer gateway installed, naming both versions, and changes nothing', async () => {
    await install();
    const error = await install(GATEWAY_SCHEMA_VERSION - 1).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(BackendError);
    expect((error as BackendError).message).to.match(
      new RegExp(`gateway schema version ${GATEWAY_SCHEMA_VERSION} .* newer than this package's ${GATEWAY_SCHEMA_VERSION - 1}: upgrade`),
    );
    expect((error as BackendError).written).to.equal(false);
    expect(await storedVersion()).to.equal(String(GATEWAY_SCHEMA_VERSION));
  });

  it('refuses to start when Graphile Worker’s schema lacks an object the worker protocol uses, naming it', async () => {
    await pool.query(`alter table "${schemas.workerSchema}"._private_tasks rename column identifier to identifier_renamed`);
    try {
      const error = await install().then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).to.be.instanceOf(BackendError);
      expect((error as BackendError).message).to.include('_private_tasks.identifier is missing');
    } finally {
      await pool.query(`alter table "${schemas.workerSchema}"._private_tasks rename column identifier_renamed to identifier`);
    }
  });
});
