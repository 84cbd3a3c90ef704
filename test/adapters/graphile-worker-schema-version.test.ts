/**
 * The adapter's schema version (graphile-worker-schema.ts): its functions are installed only over
 * an older version, a schema holding a newer version (or migration) is refused with a message
 * naming both, concurrent starts install once, and the SQL of each shipped version is pinned so
 * that a change to it cannot ship under an old version number.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { makeWorkerUtils } from 'graphile-worker';
import type pg from 'pg';
import { BackendError, isBackendError } from '../../src/index.js';
import { createGraphileWorkerBackend } from '../../adapters/graphile-worker/index.js';
import { MIGRATIONS, SCHEMA_VERSION, installUniqueJobsSchema } from '../../adapters/graphile-worker/graphile-worker-schema.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { sqlFiles } from '../../adapters/graphile-worker/generated/sql.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool, type TestSchemas } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const rejectionOf = (promise: Promise<unknown>): Promise<Error> => rejection(promise);

/**
 * A digest of the SQL each schema version installs (install-functions.sql and the migrations,
 * comment lines left out). Add an entry with each new version; never edit a shipped one.
 */
const PINNED_SQL: Record<number, string> = {
  1: 'a80973ab0d733565',
  2: '912dba3a9ca00b05',
  3: '3539b9a29fd51839',
  4: 'af9220bc47678ffb',
  5: '9e5f43cc4671c2b4',
  6: 'c3676f91a525739f',
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
    pool = makePool(6);
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
    (await pool.query<{ value: string }>(`select value from "${names.uniqueSchema}".settings where name = 'schema_version'`)).rows[0]
      ?.value;
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
    await pool.query(`update "${names.uniqueSchema}".settings set value = $1 where name = 'schema_version'`, [String(SCHEMA_VERSION + 1)]);
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

  it('installs the functions over a schema from before schema versions (no version recorded) and records the version', async () => {
    const names = schemas.current();
    await pool.query(`delete from "${names.uniqueSchema}".settings where name = 'schema_version'`);
    await pool.query(`delete from "${names.uniqueSchema}".migrations where id = 6`);
    await newerBody(names);
    expect(await install(names)).to.deep.equal({ installed: true, version: SCHEMA_VERSION, functions: true });
    expect(await lockKeyBody(names)).to.not.include("a newer package's body");
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION));
  });

  it('upgrades a version-4 schema: migration 9 creates the gateway table, keeping the rows a version-4 gateway wrote to its own', async () => {
    const names = schemas.current();
    const table = `"${names.uniqueSchema}".gateway_jobs`;
    const toVersion4 = async () => {
      await pool.query(`delete from "${names.uniqueSchema}".migrations where id = 9`);
      await pool.query(`update "${names.uniqueSchema}".settings set value = '4' where name = 'schema_version'`);
    };
    const migration9 = async () => (await pool.query(`select 1 from "${names.uniqueSchema}".migrations where id = 9`)).rowCount;
    // A schema no gateway served under version 4: no table.
    await pool.query(`drop table ${table}`);
    await toVersion4();
    expect(await install(names)).to.deep.equal({ installed: true, version: SCHEMA_VERSION, functions: true });
    expect(await migration9()).to.equal(1);
    expect(await storedVersion(names)).to.equal(String(SCHEMA_VERSION));
    expect((await pool.query(`select count(*)::int as n from ${table}`)).rows[0].n).to.equal(0);
    // A schema a version-4 gateway served: the table it created at its start-up, with its rows.
    await pool.query(`drop table ${table}`);
    await toVersion4();
    await pool.query(`create table ${table} (id text primary key, side jsonb not null default '{}')`);
    await pool.query(`insert into ${table} (id, side) values ('job-1', '{"envelope": {"tags": ["a"]}}')`);
    expect(await install(names)).to.deep.equal({ installed: true, version: SCHEMA_VERSION, functions: true });
    expect(await migration9()).to.equal(1);
    expect((await pool.query(`select id, side from ${table}`)).rows).to.deep.equal([{ id: 'job-1', side: { envelope: { tags: ['a'] } } }]);
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
