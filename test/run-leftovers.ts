/**
 * A root hook (`require` in .mocharc.cjs): once every test and hook of the run has passed, it
 * removes what the run left under its salt (test/run-salt.ts): the schema pairs and key prefixes
 * a whole file shares (a gateway's, the job fetcher's, the gateway examples'), which outlive
 * their tests. Graphile schemas `gwt_<salt>_…` and `ojs_example_…<salt>`, and Redis keys
 * `ojs-test:<salt>:…`; per-test data is removed by each
 * test already. A run with a failure keeps everything for inspection and says where it is.
 * Services that do not answer (a run of the memory tests alone) are skipped.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { deleteKeys, REDIS_URL } from './adapters/bullmq-test-redis.js';
import { databaseUrl } from './conformance/subjects/graphile-worker.js';
import { RUN_SALT } from './run-salt.js';

type Runnable = { state?: string };
type Suite = {
  tests: Runnable[];
  suites: Suite[];
  _beforeAll: Runnable[];
  _beforeEach: Runnable[];
  _afterAll: Runnable[];
  _afterEach: Runnable[];
};

function anyFailed(suite: Suite): boolean {
  const runnables = [...suite.tests, ...suite._beforeAll, ...suite._beforeEach, ...suite._afterAll, ...suite._afterEach];
  return runnables.some((runnable) => runnable.state === 'failed') || suite.suites.some(anyFailed);
}

async function dropSchemas(): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined);
  try {
    // The examples run by the tests append the salt to their schema names (OJS_EXAMPLE_SALT).
    const { rows } = await pool.query<{ name: string }>(
      `select nspname as name from pg_namespace where nspname like $1 or nspname like $2`,
      [`gwt\\_${RUN_SALT}\\_%`, `ojs\\_example\\_%${RUN_SALT}`],
    );
    for (const { name } of rows) await pool.query(`drop schema if exists ${pg.escapeIdentifier(name)} cascade`);
  } finally {
    await pool.end();
  }
}

async function deleteRedisKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await deleteKeys(redis, `ojs-test:${RUN_SALT}:*`);
  } finally {
    redis.disconnect();
  }
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    const root = this.test?.parent as unknown as Suite | undefined;
    if (!root || anyFailed(root)) {
      console.log(`test data of this run kept for inspection: PostgreSQL schemas gwt_${RUN_SALT}_*, Redis keys ojs-test:${RUN_SALT}:*`);
      return;
    }
    await Promise.all([dropSchemas().catch(() => undefined), deleteRedisKeys().catch(() => undefined)]);
  },
};
