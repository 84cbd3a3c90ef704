/**
 * Isolation for the Graphile Worker test files. A file shares one pair of schemas (Graphile
 * Worker's and the adapter's), migrated once when the file starts; before each test the rows of
 * that pair's tables are deleted. A failed test keeps its pair for inspection (`\dn gwt_*` in
 * psql) and the rest of the file moves to a new pair; so does a test that changed the pair's
 * structure (a function, column, index, trigger or migration record), whose pair is dropped. A
 * test that needs schemas nobody migrated calls `ownSchemas()` first.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RUN_SALT } from '../run-salt.js';
import { makeUniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { databaseUrl, makeSubjectPool, quietLogger } from '../conformance/subjects/graphile-worker.js';

export interface TestSchemas {
  graphileSchema: string;
  uniqueSchema: string;
}

export function schemasFor(file: string, title: string): TestSchemas {
  const id = createHash('sha1').update(`${file}\u0000${title}`).digest('hex').slice(0, 12);
  return { graphileSchema: `gwt_${RUN_SALT}_${id}_gw`, uniqueSchema: `gwt_${RUN_SALT}_${id}_ou` };
}

export function makePool(max = 10): pg.Pool {
  return makeSubjectPool(databaseUrl(), max);
}

/** Drops a previous run's leftovers, so a rerun of a failed test starts clean. */
export async function dropSchemas(pool: pg.Pool, schemas: TestSchemas): Promise<void> {
  await pool.query(`drop schema if exists "${schemas.uniqueSchema}" cascade; drop schema if exists "${schemas.graphileSchema}" cascade`);
}

/** Tables whose rows are set-up, not test data: kept by the reset, and part of the structure. */
const SETUP_TABLES = ['migrations', 'settings'];

/**
 * What catalog rows make a pair's structure: anything a reset of the rows cannot restore. The
 * schemas' members are found through pg_depend (indexed), not by scanning the catalogs.
 */
const STRUCTURE = `
  with members as (
    select classid, objid from pg_depend
     where refclassid = 'pg_namespace'::regclass and refobjid in (select oid from pg_namespace where nspname = any($1))
  ), rels as (select objid as oid from members where classid = 'pg_class'::regclass)
  select 'fn ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc) || coalesce(array_to_string(p.proconfig, ','), '')
    from pg_proc p where p.oid in (select objid from members where classid = 'pg_proc'::regclass)
  union all
  select 'rel ' || c.oid::regclass::text || ' ' || c.relkind::text from pg_class c where c.oid in (select oid from rels)
  union all
  select 'col ' || a.attrelid::regclass::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
   where a.attrelid in (select oid from rels) and a.attnum > 0 and not a.attisdropped
  union all
  select 'con ' || co.conname || ' ' || pg_get_constraintdef(co.oid) from pg_constraint co where co.conrelid in (select oid from rels)
  union all
  select 'idx ' || pg_get_indexdef(i.indexrelid) from pg_index i where i.indrelid in (select oid from rels)
  union all
  select 'trg ' || t.tgname || ' ' || t.tgenabled::text || ' ' || pg_get_triggerdef(t.oid) from pg_trigger t where t.tgrelid in (select oid from rels) and not t.tgisinternal`;

interface ResetPlan {
  /** One query: a digest of the structure and of the set-up tables' rows. */
  structure: string;
  /** One multi-statement query: the test-data rows deleted (referencing tables first), sequences restarted. */
  reset: string;
}

/** Reads a freshly migrated pair's tables, foreign keys and sequences once. */
async function planFor(pool: pg.Pool, schemas: TestSchemas): Promise<ResetPlan> {
  const names = [schemas.graphileSchema, schemas.uniqueSchema];
  const { rows: tables } = await pool.query<{ schema: string; table: string; name: string }>(
    "select schemaname as schema, tablename as table, format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = any($1)",
    [names],
  );
  const { rows: references } = await pool.query<{ from: string; to: string }>(
    `select format('%I.%I', fn.nspname, f.relname) as from, format('%I.%I', tn.nspname, t.relname) as to
       from pg_constraint co join pg_class f on f.oid = co.conrelid join pg_namespace fn on fn.oid = f.relnamespace
       join pg_class t on t.oid = co.confrelid join pg_namespace tn on tn.oid = t.relnamespace
      where co.contype = 'f' and fn.nspname = any($1)`,
    [names],
  );
  const { rows: sequences } = await pool.query<{ name: string }>(
    "select format('%I.%I', sequence_schema, sequence_name) as name from information_schema.sequences where sequence_schema = any($1)",
    [names],
  );
  const setup = tables.filter(
    ({ schema, table }) => SETUP_TABLES.includes(table) || (schema === schemas.graphileSchema && table === '_private_tasks'),
  );
  // Referencing tables before the tables they reference (no cycles among these tables).
  // x_successor's pending rows first: deleting a holder's Graphile row would otherwise add its successor.
  const data = tables
    .filter((t) => !setup.includes(t))
    .sort((a, b) => Number(b.table === 'successors') - Number(a.table === 'successors'))
    .map(({ name }) => name);
  const ordered: string[] = [];
  const visit = (name: string, path: Set<string>) => {
    if (ordered.includes(name) || path.has(name)) return;
    path.add(name);
    for (const { from, to } of references) if (to === name && from !== name && data.includes(from)) visit(from, path);
    ordered.push(name);
  };
  for (const name of data) visit(name, new Set());
  const setupRows = setup
    .filter(({ table }) => table !== '_private_tasks')
    .map(({ name }) => `select 'row ${name} ' || row_to_json(t)::text from ${name} t`);
  return {
    structure: `select md5(string_agg(item, E'\\n' order by item)) as digest from (${[STRUCTURE, ...setupRows].join('\n  union all\n')}) items(item)`,
    reset: [...ordered.map((name) => `delete from ${name}`), ...sequences.map(({ name }) => `select setval('${name}', 1, false)`)].join(
      ';\n',
    ),
  };
}

/** The pair's structure digest, or null when it cannot even be read (a set-up table was dropped). */
async function structureOf(pool: pg.Pool, plan: ResetPlan, schemas: TestSchemas): Promise<string | null> {
  try {
    const { rows } = await pool.query<{ digest: string | null }>(plan.structure, [[schemas.graphileSchema, schemas.uniqueSchema]]);
    return rows[0]!.digest;
  } catch {
    return null;
  }
}

/** Migrates both schemas of a pair (Graphile Worker's, then the adapter's through the preset). */
async function migrate(schemas: TestSchemas): Promise<void> {
  const pool = makePool(2);
  try {
    const utils = await makeUniqueWorkerUtils({
      pgPool: pool,
      schema: schemas.graphileSchema,
      uniqueSchema: schemas.uniqueSchema,
      logger: quietLogger,
    });
    await utils.release();
  } finally {
    await pool.end();
  }
}

/**
 * One file's shared pair of schemas, without mocha hooks (for a test subject factory): `next()`
 * before each test (the rows reset, or a new migrated pair when there is none or the last one's
 * structure changed), `done(failed)` after it (a failure keeps the pair for inspection), `close()`
 * after the file.
 */
export class SharedSchemaPair {
  #admin: pg.Pool | null = null;
  #shared: TestSchemas | null = null;
  #plan: ResetPlan | null = null;
  #baseline: string | null = null;
  #generation = 0;

  constructor(readonly file: string) {}

  get admin(): pg.Pool {
    return (this.#admin ??= makePool(2));
  }

  /** The schemas the next test uses, their test-data rows deleted. */
  async next(): Promise<TestSchemas> {
    const admin = this.admin;
    if (this.#shared && (this.#baseline === null || (await structureOf(admin, this.#plan!, this.#shared)) !== this.#baseline)) {
      await dropSchemas(admin, this.#shared);
      this.#shared = null;
    }
    if (this.#shared) {
      await admin.query(this.#plan!.reset);
      return this.#shared;
    }
    const shared = schemasFor(this.file, `shared ${this.#generation++}`);
    await dropSchemas(admin, shared);
    await migrate(shared);
    this.#plan = await planFor(admin, shared);
    this.#baseline = await structureOf(admin, this.#plan, shared);
    return (this.#shared = shared);
  }

  /** After a test: a failed one's pair is kept (and never used again). */
  done(failed: boolean): void {
    if (!failed || !this.#shared) return;
    keep(this.#shared);
    this.#shared = null;
  }

  async close(): Promise<void> {
    if (this.#shared) await dropSchemas(this.admin, this.#shared);
    this.#shared = null;
    await this.#admin?.end();
    this.#admin = null;
  }
}

/**
 * A subject factory on a file's shared pair: each test's subject gets the pair, its rows reset
 * (`next()`); a failed test keeps the pair (`done`), and the subject never drops it.
 */
export function onSharedPair<S extends { close(result?: { passed: boolean }): Promise<void> }>(
  pair: SharedSchemaPair,
  make: (schemas: TestSchemas) => Promise<S>,
): () => Promise<S> {
  return async () => {
    const subject = await make(await pair.next());
    return {
      ...subject,
      async close(result?: { passed: boolean }) {
        pair.done(!result?.passed);
        await subject.close({ passed: false });
      },
    };
  };
}

function keep(schemas: TestSchemas): void {
  console.error(`      kept schemas ${schemas.graphileSchema} and ${schemas.uniqueSchema} for inspection`);
}

/**
 * Registers the schema lifecycle on the current `describe` (one migrated pair per file, rows
 * reset between tests, see the file's comment). `current()` gives the running test's schemas;
 * `await ownSchemas()`, at the start of a test, gives it a pair of its own, not migrated,
 * dropped after it passes.
 */
export function isolatePerTest(file: string): { current(): TestSchemas; admin(): pg.Pool; ownSchemas(): Promise<TestSchemas> } {
  const pair = new SharedSchemaPair(file);
  let shared: TestSchemas | null = null;
  let own: TestSchemas | null = null;
  let running = false;
  let title = '';
  before(async function () {
    this.timeout(60_000);
    shared = await pair.next();
  });
  after(async () => {
    await pair.close();
  });
  beforeEach(async function () {
    running = true;
    title = this.currentTest!.fullTitle();
    own = null;
    shared = await pair.next();
  });
  afterEach(async function () {
    running = false;
    const failed = this.currentTest?.state === 'failed';
    if (own && !failed) await dropSchemas(pair.admin, own);
    else if (own) keep(own);
    pair.done(failed);
  });
  return {
    current: () => {
      const schemas = own ?? shared;
      if (!schemas) throw new Error("no schemas: the file's set-up failed");
      return schemas;
    },
    async ownSchemas() {
      if (!running) throw new Error('no test is running');
      own = schemasFor(file, title);
      await dropSchemas(pair.admin, own);
      return own;
    },
    admin: () => pair.admin,
  };
}
