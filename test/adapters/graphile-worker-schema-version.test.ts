/**
 * The adapter's schema version (graphile-worker-schema.ts): its functions are installed only over
 * an older version, a schema holding a newer version (or migration) is refused with a message
 * naming both, a schema a pre-release build installed is refused by every entry point with a
 * message saying how to reinstall it, concurrent starts install once, and the SQL of each
 * released version is pinned so that a change to it cannot ship under an old version number.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { makeWorkerUtils } from 'graphile-worker';
import type pg from 'pg';
import { BackendError, isBackendError } from '../../src/index.js';
import {
  UniqueSchemaVersionError,
  createGraphileWorkerBackend,
  makeUniqueWorkerUtils,
  runUniqueJobsMigrations,
} from '../../adapters/graphile-worker/index.js';
import { MIGRATIONS, SCHEMA_VERSION, installUniqueJobsSchema } from '../../adapters/graphile-worker/graphile-worker-schema.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { sqlFiles } from '../../adapters/graphile-worker/generated/sql.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool, type TestSchemas } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const rejectionOf = (promise: Promise<unknown>): Promise<Error> => rejection(promise);

/**
 * A digest of the SQL each schema version installs (sql/functions/*.sql and the migrations,
 * comment lines left out). Add an entry with each new version; never edit a released one.
 */
const PINNED_SQL: Record<number, string> = {
  1: 'd8ac75782c503494',
};

function versionedSqlDigest(): string {
  const files = ['install-functions' as const, ...MIGRATIONS.map((migration) => migration.file)];
  const code = files.map(
    (file) =>
      `-- file ${file}\n${sqlFiles[file]
        .split('\n')
        .filter((line) => !/^\s*--/.test(line) && line.trim() !== '')
        .join('\n')}`,
  );
  return createHash('sha256').update(code.join('\n')).digest('hex').slice(0, 16);
}

describe('graphile-worker schema version', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;

  beforeEach(() => {
    pool = makePool(4);
  });
  afterEach(async () => {
    await pool.end();
  });

  const backendFor = (names: TestSchemas) =>
    createGraphileWorkerBackend({ pgPool: pool, uniqueSchema: names.uniqueSchema, workerSchema: names.graphileSchema, migrate: false });
  const install = async (names: TestSchemas, schemaVersion?: number) => {
    const client = await pool.connect();
    try {
      return await installUniqueJobsSchema(
        client,
        new GraphileWorkerSql({ workerSchema: names.graphileSchema, uniqueSchema: names.uniqueSchema }),
        { schemaVersion },
      );
    } finally {
      client.release();
    }
  };
  const storedVersion = async (names: TestSchemas) =>
    (await pool.query<{ value: string }>(`select value from "${names.uniqueSchema}".settings where name = 'version'`)).rows[0]?.value;
  /** Every function body of the adapter's schema, to tell whether an install rewrote one. */
  const bodies = async (names: TestSchemas) =>
    (
      await pool.query<{ digest: string }>(
        `select md5(string_agg(p.proname || p.prosrc, '' order by p.oid)) as digest from pg_proc p where p.pronamespace = $1::regnamespace`,
        [names.uniqueSchema],
      )
    ).rows[0]!.digest;
  /** A body only a newer package would have (lock_key, unchanged but for a comment). */
  const newerBody = (names: TestSchemas) =>
    pool.query(`create or replace function "${names.uniqueSchema}".lock_key(p_fingerprint text)
      returns void language plpgsql volatile set plan_cache_mode = force_generic_plan as $$
      begin
        -- a newer package's body
        insert into "${names.uniqueSchema}".heads as h (fingerprint) values (p_fingerprint)
          on conflict (fingerprint) do update set seq = h.seq + 1;
      end
      $$`);
  const lockKeyBody = async (names: TestSchemas) =>
    (
      await pool.query<{ src: string }>(
        `select prosrc as src from pg_proc where pronamespace = $1::regnamespace and proname = 'lock_key'`,
        [names.uniqueSchema],
      )
    ).rows[0]!.src;

  it('records SCHEMA_VERSION, and installs the functions again only for a newer version', async () => {
    const names = schemas.current();
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION));
    await newerBody(names);
    // Same version: the trigger is checked, the bodies are left as they are.
    expect(await install(names)).to.deep.equal({ installed: true, version: SCHEMA_VERSION, functions: false });
    expect(await lockKeyBody(names)).to.include("a newer package's body");
    // A newer package installs its bodies and records its version.
    expect(await install(names, SCHEMA_VERSION + 1)).to.deep.equal({ installed: true, version: SCHEMA_VERSION + 1, functions: true });
    expect(await lockKeyBody(names)).to.not.include("a newer package's body");
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION + 1));
  });

  it('refuses an older package’s install over a newer schema version, naming both, and leaves every body as it was', async () => {
    const names = schemas.current();
    await newerBody(names);
    const before = await bodies(names);
    const older = await rejectionOf(install(names, SCHEMA_VERSION - 1));
    expect(older).to.be.instanceOf(BackendError);
    expect(isBackendError(older) && older.written).to.equal(false);
    expect(older.message).to.match(
      new RegExp(
        `the database holds a newer ojs-unique schema version ${SCHEMA_VERSION} \\(schema "${names.uniqueSchema}"\\) than this package's schema version ${SCHEMA_VERSION - 1}: upgrade the ojs-unique package`,
      ),
    );
    expect(await bodies(names)).to.equal(before);
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION));
    // This package, started against a schema a newer one installed: the same refusal at start-up.
    await pool.query(`update "${names.uniqueSchema}".settings set value = $1 where name = 'version'`, [String(SCHEMA_VERSION + 1)]);
    const backend = backendFor(names);
    try {
      const error = await rejectionOf(backend.ready());
      expect(error).to.be.instanceOf(BackendError);
      expect(error.message).to.match(
        new RegExp(
          `newer ojs-unique schema version ${SCHEMA_VERSION + 1} .* than this package's schema version ${SCHEMA_VERSION}: upgrade`,
        ),
      );
    } finally {
      await backend.close();
    }
    expect(await bodies(names)).to.equal(before);
  });

  it('refuses a schema a newer package migrated, naming the migration', async () => {
    const names = schemas.current();
    const known = MIGRATIONS[MIGRATIONS.length - 1]!.id;
    await pool.query(`insert into "${names.uniqueSchema}".migrations (id) values (99)`);
    const before = await bodies(names);
    const error = await rejectionOf(install(names));
    expect(error).to.be.instanceOf(BackendError);
    expect(error.message).to.match(
      new RegExp(`newer ojs-unique migration 99 .* than this package's migration ${known}: upgrade the ojs-unique package`),
    );
    expect(await bodies(names)).to.equal(before);
  });

  /**
   * The schema as a pre-release build left it: its migrations (1 to 10 for the last ones, 1 to 5
   * before schema versions were recorded) and its version under the pre-release name
   * `schema_version`, or none; no `version` row.
   */
  const toPreRelease = async (names: TestSchemas, migrations: number, version: number | null) => {
    const u = `"${names.uniqueSchema}"`;
    await pool.query(`delete from ${u}.settings where name = 'version'`);
    if (version !== null) await pool.query(`insert into ${u}.settings (name, value) values ('schema_version', $1)`, [String(version)]);
    // The release's own migrations (1, 2) are recorded already: a pre-release build's ids overlap them.
    await pool.query(`insert into ${u}.migrations (id) select generate_series(2, $1::int) on conflict do nothing`, [migrations]);
  };
  const expectPreReleaseRefusal = (error: Error, names: TestSchemas, migrations: string) => {
    // By name and brand, not instanceof: the backend's migrate: true start-up loads the preset by
    // a dynamic import, which tsx gives a module instance of its own.
    expect(isBackendError(error)).to.equal(true);
    expect(error).to.include({
      name: 'UniqueSchemaVersionError',
      code: 'backend_error',
      written: false,
      preRelease: true,
      found: null,
      required: SCHEMA_VERSION,
    });
    expect(error.message).to.equal(
      `graphile-worker: schema "${names.uniqueSchema}" was installed by a pre-release build of ojs-unique (migrations ${migrations} recorded, ` +
        `no schema version), which no release of ojs-unique upgrades; this package needs schema version ${SCHEMA_VERSION}. ` +
        `Reinstall it: drop the schema (\`drop schema "${names.uniqueSchema}" cascade\`, which also drops its trigger on ` +
        `"${names.graphileSchema}"._private_jobs; Graphile Worker's jobs stay, without their uniqueness records), then install it again: ` +
        `\`npx ojs-unique migrate --database-url <url> --graphile-schema ${names.graphileSchema} --unique-schema ${names.uniqueSchema}\`, ` +
        'runUniqueJobsMigrations() from ojs-unique/graphile-worker, or any start-up with migrate: true. Nothing was written.',
    );
  };

  it('refuses a schema a pre-release build installed, on every entry point, saying how to reinstall it; following that works', async () => {
    const names = schemas.current();
    await toPreRelease(names, 10, 6);
    const before = await bodies(names);
    const migrations = '1, 2, 3, 4, 5, 6, 7, 8, 9, 10';
    const refused = await rejectionOf(install(names));
    expect(refused).to.be.instanceOf(UniqueSchemaVersionError);
    expectPreReleaseRefusal(refused, names, migrations);
    for (const migrate of [true, false]) {
      const backend = createGraphileWorkerBackend({
        pgPool: pool,
        uniqueSchema: names.uniqueSchema,
        workerSchema: names.graphileSchema,
        migrate,
      });
      try {
        expectPreReleaseRefusal(await rejectionOf(backend.ready()), names, migrations);
      } finally {
        await backend.close();
      }
    }
    expectPreReleaseRefusal(
      await rejectionOf(
        makeUniqueWorkerUtils({ pgPool: pool, schema: names.graphileSchema, uniqueSchema: names.uniqueSchema, logger: quietLogger }),
      ),
      names,
      migrations,
    );
    expectPreReleaseRefusal(
      await rejectionOf(
        runUniqueJobsMigrations({
          pgPool: pool,
          workerSchema: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          logger: quietLogger,
        }),
      ),
      names,
      migrations,
    );
    // Nothing was written: the pre-release marker, migrations and bodies are as they were.
    expect(await bodies(names)).to.equal(before);
    expect(await storedVersion(names)).to.equal(undefined);
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from "${names.uniqueSchema}".migrations`);
    expect(rows[0]!.n).to.equal(10);
    // What the message says to do: drop the schema (its trigger on Graphile's table goes with
    // it), install again; unique adds then work.
    await pool.query(`drop schema "${names.uniqueSchema}" cascade`);
    const triggers = await pool.query(`select 1 from pg_trigger where tgrelid = $1::regclass and not tgisinternal`, [
      `"${names.graphileSchema}"._private_jobs`,
    ]);
    expect(triggers.rowCount).to.equal(0);
    const reinstalled = await runUniqueJobsMigrations({
      pgPool: pool,
      workerSchema: names.graphileSchema,
      uniqueSchema: names.uniqueSchema,
      logger: quietLogger,
    });
    expect(reinstalled).to.include({ version: SCHEMA_VERSION, functions: true });
    const backend = backendFor(names);
    try {
      expect((await backend.enqueue({ type: 'after_reinstall', args: {}, unique: {} })).outcome).to.equal('created');
    } finally {
      await backend.close();
    }
  });

  it('refuses a schema from a pre-release build older than schema versions (migrations 1 to 5, no version at all) the same way', async () => {
    const names = schemas.current();
    await toPreRelease(names, 5, null);
    expectPreReleaseRefusal(await rejectionOf(install(names)), names, '1, 2, 3, 4, 5');
    expect(await storedVersion(names)).to.equal(undefined);
  });

  it('concurrent starts on a fresh schema install once: every one succeeds, one installs the functions', async () => {
    const names = await schemas.ownSchemas();
    const utils = await makeWorkerUtils({ pgPool: pool, schema: names.graphileSchema, logger: quietLogger });
    await utils.release();
    const results = await Promise.all(Array.from({ length: 4 }, () => install(names)));
    expect(results.every((result) => result.installed)).to.equal(true);
    expect(results.filter((result) => result.installed && result.functions)).to.have.length(1);
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION));
    const { rows } = await pool.query<{ id: number }>(`select id from "${names.uniqueSchema}".migrations order by id`);
    expect(rows.map((row) => row.id)).to.deep.equal(MIGRATIONS.map((migration) => migration.id));
  });

  it('pins the SQL of each schema version: install-functions.sql or a migration changed means a new SCHEMA_VERSION', () => {
    const digest = versionedSqlDigest();
    const newest = Math.max(...Object.keys(PINNED_SQL).map(Number));
    expect(newest, 'SCHEMA_VERSION and the newest pinned version differ: pin the new version’s digest here').to.equal(SCHEMA_VERSION);
    expect(
      PINNED_SQL[SCHEMA_VERSION],
      `the SQL of schema version ${SCHEMA_VERSION} changed (digest ${digest}): bump SCHEMA_VERSION in graphile-worker-schema.ts to ${SCHEMA_VERSION + 1} ` +
        `and add { ${SCHEMA_VERSION + 1}: '${digest}' } to PINNED_SQL, so that a database holding version ${SCHEMA_VERSION} gets the new functions`,
    ).to.equal(digest);
  });
});
