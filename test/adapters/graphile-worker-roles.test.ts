/**
 * Separate install and runtime roles (docs/graphile-worker.md): once `runUniqueJobsMigrations`
 * (or `ojs-unique migrate`) has installed both schemas with a role that may create them, every
 * entry point starts and enqueues as a role that has only USAGE on the schemas, DML on their
 * tables, USAGE on their sequences and EXECUTE on their functions, and creates nothing; with
 * `migrate: false` a missing or older schema is a `UniqueSchemaVersionError` naming both versions.
 *
 * Each test makes a LOGIN role of its own (named from the run's salt), connects as it (the test
 * server trusts local connections), and drops it when the test passed.
 */
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { runOnce, runMigrations } from 'graphile-worker';
import type pg from 'pg';
import { isBackendError } from '../../src/index.js';
import {
  UniqueSchemaVersionError,
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  runUniqueJobsMigrations,
  withUniqueHelpers,
} from '../../adapters/graphile-worker/index.js';
import { SCHEMA_VERSION } from '../../adapters/graphile-worker/graphile-worker-schema.js';
import { runGatewayMigrations } from '../../server/graphile-worker-migrate.js';
import { GATEWAY_SCHEMA_VERSION } from '../../server/graphile-worker-gateway-schema.js';
import { createGraphileWorkerGatewayStore } from '../../server/graphile-worker-gateway-store.js';
import { RUN_SALT } from '../run-salt.js';
import { databaseUrl, makeSubjectPool, quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, type TestSchemas } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';
import { cliArgs } from '../cli-command.js';

const FILE = fileURLToPath(import.meta.url);
const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };

describe('graphile-worker separate install and runtime roles', function () {
  this.timeout(60_000);
  const schemas = isolatePerTest(FILE);
  let roleCount = 0;
  /** The role the running test made, its pools, to end and drop after it. */
  let role: { name: string; pools: pg.Pool[] } | null = null;

  afterEach(async function () {
    if (!role) return;
    const { name, pools } = role;
    role = null;
    await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
    if (this.currentTest?.state === 'failed') {
      console.error(`      kept role ${name} for inspection`);
      return;
    }
    // Tables it was given back to the test's role; its privileges and policies go with DROP OWNED.
    await schemas.admin().query(`reassign owned by "${name}" to current_user; drop owned by "${name}"; drop role "${name}"`);
  });

  /**
   * A LOGIN role with the runtime grants on `names` (those that exist), and no CREATE anywhere.
   * Graphile Worker's `_private_*` tables have row-level security enabled with no policy, so only
   * their owner (or a BYPASSRLS role) sees or writes their rows: `graphileRows` is how the role
   * gets past it, with a policy of its own on each table, or as their owner (Graphile's advice).
   */
  async function runtimeRole(
    names: TestSchemas,
    graphileRows: 'policies' | 'owner' = 'policies',
  ): Promise<{ name: string; url: string; pool(max?: number): pg.Pool }> {
    const name = `ojs_rt_${RUN_SALT}_${process.pid}_${roleCount++}`;
    const admin = schemas.admin();
    await admin.query(`drop role if exists "${name}"`);
    await admin.query(`create role "${name}" login`);
    role = { name, pools: [] };
    const existing = (
      await admin.query<{ nspname: string }>('select nspname from pg_namespace where nspname = any($1)', [
        [names.graphileSchema, names.uniqueSchema],
      ])
    ).rows.map((row) => `"${row.nspname}"`);
    if (existing.length > 0) {
      const list = existing.join(', ');
      await admin.query(`grant usage on schema ${list} to "${name}";
        grant select, insert, update, delete on all tables in schema ${list} to "${name}";
        grant usage on all sequences in schema ${list} to "${name}";
        grant execute on all functions in schema ${list} to "${name}"`);
    }
    const { rows: privateTables } = await admin.query<{ name: string }>(
      `select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = $1 and tablename like '\\_private\\_%'`,
      [names.graphileSchema],
    );
    for (const table of privateTables) {
      await admin.query(
        graphileRows === 'owner'
          ? `alter table ${table.name} owner to "${name}"`
          : `create policy "${name}" on ${table.name} to "${name}" using (true) with check (true)`,
      );
    }
    const { rows } = await admin.query<{ database: boolean; schemas: boolean }>(
      `select has_database_privilege($1, current_database(), 'CREATE') as database,
              coalesce(bool_or(has_schema_privilege($1, n.oid, 'CREATE')), false) as schemas
         from pg_namespace n where n.nspname = any($2)`,
      [name, [names.graphileSchema, names.uniqueSchema, 'public']],
    );
    expect(rows[0], 'the runtime role may create nothing').to.deep.equal({ database: false, schemas: false });
    const url = new URL(databaseUrl());
    url.username = name;
    url.password = '';
    const made = role;
    return {
      name,
      url: url.href,
      pool: (max = 4) => {
        const pool = makeSubjectPool(url.href, max);
        made.pools.push(pool);
        return pool;
      },
    };
  }

  /** What the role owns (schemas, relations, functions): nothing, if it created nothing. */
  const ownedBy = async (name: string) =>
    (
      await schemas.admin().query<{ n: number }>(
        `select ((select count(*) from pg_namespace where nspowner = r.oid) + (select count(*) from pg_class where relowner = r.oid)
              + (select count(*) from pg_proc where proowner = r.oid))::int as n
           from pg_roles r where r.rolname = $1`,
        [name],
      )
    ).rows[0]!.n;
  const schemaExists = async (schema: string) =>
    (await schemas.admin().query('select 1 from pg_namespace where nspname = $1', [schema])).rowCount === 1;

  for (const graphileRows of ['policies', 'owner'] as const) {
    it(`after runUniqueJobsMigrations, a role without CREATE (Graphile's rows: ${graphileRows}) starts every entry point and adds, duplicates answered`, async () => {
      const names = await schemas.ownSchemas();
      const installer = makeSubjectPool(databaseUrl(), 2);
      try {
        const first = await runUniqueJobsMigrations({
          pgPool: installer,
          workerSchema: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          logger: quietLogger,
        });
        expect(first).to.deep.equal({
          schemas: { workerSchema: names.graphileSchema, uniqueSchema: names.uniqueSchema },
          version: SCHEMA_VERSION,
          functions: true,
        });
        const again = await runUniqueJobsMigrations({
          pgPool: installer,
          workerSchema: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          logger: quietLogger,
        });
        expect(again.functions, 'a second run finds everything current').to.equal(false);
        // `ojs-unique migrate`: the gateway's own tables too, for the gateway's store below.
        await runGatewayMigrations({
          pgPool: installer,
          workerSchema: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          logger: quietLogger,
        });
      } finally {
        await installer.end();
      }
      const runtime = await runtimeRole(names, graphileRows);
      const pool = runtime.pool();
      const given = await ownedBy(runtime.name); // Graphile's tables, when given to it

      // makeUniqueWorkerUtils: Graphile's migrate() and the preset's install, both only reading.
      const utils = await makeUniqueWorkerUtils({
        pgPool: pool,
        schema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
        logger: quietLogger,
      });
      try {
        expect((await utils.addJob('receipt', { order: 1 }, { unique })).outcome).to.equal('created');
        expect((await utils.addJob('receipt', { order: 1 }, { unique })).outcome).to.equal('deduplicated');
      } finally {
        await utils.release();
      }

      // The backend, with migrate: false (checks only) and with the default (migrates, reading only).
      for (const migrate of [false, true]) {
        const backend = createGraphileWorkerBackend({
          pgPool: pool,
          workerSchema: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          migrate,
        });
        try {
          const job = { type: `invoice-${migrate}`, args: { order: 1 }, unique };
          expect((await backend.enqueue(job)).outcome).to.equal('created');
          expect((await backend.enqueue(job)).outcome).to.equal('deduplicated');
        } finally {
          await backend.close();
        }
      }

      // addJobWithClient in the role's own transaction.
      const client = await pool.connect();
      try {
        await client.query('begin');
        const options = { workerSchema: names.graphileSchema, uniqueSchema: names.uniqueSchema };
        expect((await addJobWithClient(client, 'audit', { order: 1 }, { unique }, options)).outcome).to.equal('created');
        expect((await addJobWithClient(client, 'audit', { order: 1 }, { unique }, options)).outcome).to.equal('deduplicated');
        await client.query('commit');
      } finally {
        client.release();
      }

      // A Graphile runner with the preset, a task adding through withUniqueHelpers: the runner
      // registers task identifiers, locks, completes (the adapter's trigger writes the ledger).
      const followUps: string[] = [];
      await runOnce({
        pgPool: pool,
        schema: names.graphileSchema,
        logger: quietLogger,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema: names.uniqueSchema })] },
        taskList: withUniqueHelpers(
          {
            receipt: async (_payload, helpers) => {
              for (let i = 0; i < 2; i++) followUps.push((await helpers.addJob('digest', { day: 1 }, { unique })).outcome);
            },
            invoice: async () => undefined,
            'invoice-false': async () => undefined,
            'invoice-true': async () => undefined,
            audit: async () => undefined,
            digest: async () => undefined,
          },
          { workerSchema: names.graphileSchema, uniqueSchema: names.uniqueSchema },
        ),
      });
      expect(followUps).to.deep.equal(['created', 'deduplicated']);
      const { rows } = await schemas
        .admin()
        .query<{ n: number }>(`select count(*)::int as n from "${names.uniqueSchema}".jobs where terminal_state = 'completed'`);
      expect(rows[0]!.n, 'the trigger recorded the completions, running as the role').to.be.greaterThan(0);

      // The OJS gateway's store starts the same way (the backend's default start-up).
      const store = createGraphileWorkerGatewayStore({
        databaseUrl: runtime.url,
        graphileSchema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
      });
      try {
        const job = { type: 'gateway', args: { n: 1 }, unique, extras: {} };
        expect((await store.enqueue(job)).outcome).to.equal('created');
        expect((await store.enqueue(job)).outcome).to.equal('deduplicated');
      } finally {
        await store.close();
      }
      expect(await ownedBy(runtime.name), 'the role created nothing').to.equal(given);
    });
  }

  it('migrate: false against a missing adapter schema is a UniqueSchemaVersionError saying how to install, and creates nothing', async () => {
    const names = await schemas.ownSchemas();
    const installer = makeSubjectPool(databaseUrl(), 2);
    try {
      await runMigrations({ pgPool: installer, schema: names.graphileSchema, logger: quietLogger }); // Graphile's schema only
    } finally {
      await installer.end();
    }
    const runtime = await runtimeRole(names);
    const pool = runtime.pool();
    const backend = createGraphileWorkerBackend({
      pgPool: pool,
      workerSchema: names.graphileSchema,
      uniqueSchema: names.uniqueSchema,
      migrate: false,
    });
    try {
      const error = await rejection(backend.enqueue({ type: 'a', args: {}, unique }));
      expect(error).to.be.instanceOf(UniqueSchemaVersionError);
      expect(isBackendError(error) && error.written).to.equal(false);
      expect(error).to.include({ schema: names.uniqueSchema, found: null, required: SCHEMA_VERSION });
      expect(error.message).to.include(`schema "${names.uniqueSchema}" is not installed`);
      expect(error.message).to.include(
        `the database holds no ojs-unique schema version, this package needs schema version ${SCHEMA_VERSION}`,
      );
      expect(error.message).to.include(
        `npx ojs-unique migrate --database-url <url> --graphile-schema ${names.graphileSchema} --unique-schema ${names.uniqueSchema}`,
      );
    } finally {
      await backend.close();
    }
    // A superuser's migrate: false creates nothing either.
    const admin = createGraphileWorkerBackend({
      pgPool: schemas.admin(),
      workerSchema: names.graphileSchema,
      uniqueSchema: names.uniqueSchema,
      migrate: false,
    });
    try {
      expect(await rejection(admin.ready())).to.be.instanceOf(UniqueSchemaVersionError);
    } finally {
      await admin.close();
    }
    expect(await schemaExists(names.uniqueSchema), 'the adapter’s schema was not created').to.equal(false);
    // The default start-up as the role tries to install, may not, and says so the same way.
    const refused = await rejection(
      makeUniqueWorkerUtils({ pgPool: pool, schema: names.graphileSchema, uniqueSchema: names.uniqueSchema, logger: quietLogger }),
    );
    expect(refused).to.be.instanceOf(UniqueSchemaVersionError);
    expect(refused.message).to.match(/is not installed, and this role may not install it \(SQLSTATE 42501: permission denied/);
    expect((refused.cause as { code?: string }).code).to.equal('42501');
    expect(await schemaExists(names.uniqueSchema)).to.equal(false);
    expect(await ownedBy(runtime.name)).to.equal(0);
  });

  it('an older adapter schema: migrate: false and a role without CREATE name both versions; the installer’s upgrade lets them start', async () => {
    const names = schemas.current();
    const admin = schemas.admin();
    const setVersion = (version: number) =>
      admin.query(`update "${names.uniqueSchema}".settings set value = $1 where name = 'version'`, [String(version)]);
    const runtime = await runtimeRole(names);
    const pool = runtime.pool();
    await setVersion(SCHEMA_VERSION - 1);
    try {
      const backend = createGraphileWorkerBackend({
        pgPool: pool,
        workerSchema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
        migrate: false,
      });
      try {
        const error = await rejection(backend.ready());
        expect(error).to.be.instanceOf(UniqueSchemaVersionError);
        expect(error).to.include({ found: SCHEMA_VERSION - 1, required: SCHEMA_VERSION });
        expect(error.message).to.include(
          `schema "${names.uniqueSchema}" holds schema version ${SCHEMA_VERSION - 1}: the database holds ojs-unique schema version ${SCHEMA_VERSION - 1}, this package needs schema version ${SCHEMA_VERSION}`,
        );
      } finally {
        await backend.close();
      }
      const refused = await rejection(
        makeUniqueWorkerUtils({ pgPool: pool, schema: names.graphileSchema, uniqueSchema: names.uniqueSchema, logger: quietLogger }),
      );
      expect(refused).to.be.instanceOf(UniqueSchemaVersionError);
      expect(refused.message).to.include('this role may not install it (SQLSTATE 42501');
      // The install step, run with the installing role, upgrades; the runtime role then starts.
      const upgraded = await runUniqueJobsMigrations({
        pgPool: admin,
        workerSchema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
        logger: quietLogger,
      });
      expect(upgraded.functions).to.equal(true);
      const utils = await makeUniqueWorkerUtils({
        pgPool: pool,
        schema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
        logger: quietLogger,
      });
      try {
        expect((await utils.addJob('after-upgrade', {}, { unique })).outcome).to.equal('created');
      } finally {
        await utils.release();
      }
    } finally {
      await setVersion(SCHEMA_VERSION);
    }
    expect(await ownedBy(runtime.name)).to.equal(0);
  });

  it('ojs-unique migrate installs both schemas, then reports them current', async () => {
    const names = await schemas.ownSchemas();
    const run = () =>
      spawnSync(
        process.execPath,
        cliArgs(
          'migrate',
          '--database-url',
          databaseUrl(),
          '--graphile-schema',
          names.graphileSchema,
          '--unique-schema',
          names.uniqueSchema,
        ),
        { encoding: 'utf8' },
      );
    const first = run();
    expect(first.stderr).to.equal('');
    expect(first.status).to.equal(0);
    expect(first.stdout).to.equal(
      `Graphile Worker schema "${names.graphileSchema}" migrated; ojs-unique schema "${names.uniqueSchema}" at schema version ${SCHEMA_VERSION} (installed or upgraded); ` +
        `the OJS gateway's tables at version ${GATEWAY_SCHEMA_VERSION}\n`,
    );
    const second = run();
    expect(second.status).to.equal(0);
    expect(second.stdout).to.include('(already current)');
    const backend = createGraphileWorkerBackend({
      pgPool: schemas.admin(),
      workerSchema: names.graphileSchema,
      uniqueSchema: names.uniqueSchema,
      migrate: false,
    });
    try {
      expect((await backend.enqueue({ type: 'cli', args: {}, unique })).outcome).to.equal('created');
    } finally {
      await backend.close();
    }
  });
});
