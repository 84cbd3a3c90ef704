/**
 * Isolation for the Graphile Worker test files: every test gets its own pair of schemas (Graphile
 * Worker's and the adapter's), named from a hash of the file and the test title, dropped when the
 * test passed and kept for inspection when it failed (`\dn gwt_*` in psql).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RUN_SALT } from '../run-salt.js';
import { databaseUrl, makeSubjectPool } from '../../examples/demo-backends/graphile-worker.js';

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

/**
 * Registers the per-test schema lifecycle on the current `describe`. `current()` gives the running
 * test's schemas.
 */
export function isolatePerTest(file: string): { current(): TestSchemas; admin(): pg.Pool } {
  let schemas: TestSchemas | null = null;
  let admin: pg.Pool | null = null;
  before(() => {
    admin = makePool(2);
  });
  after(async () => {
    await admin?.end();
  });
  beforeEach(async function () {
    schemas = schemasFor(file, this.currentTest!.fullTitle());
    await dropSchemas(admin!, schemas);
  });
  afterEach(async function () {
    if (schemas && this.currentTest?.state !== 'failed') await dropSchemas(admin!, schemas);
    else if (schemas) console.error(`      kept schemas ${schemas.graphileSchema} and ${schemas.uniqueSchema} for inspection`);
  });
  return {
    current: () => {
      if (!schemas) throw new Error('no test is running');
      return schemas;
    },
    admin: () => admin!,
  };
}
