/**
 * A root hook (`require` in .mocharc.cjs): once every test and hook of the run has passed, it
 * removes what the run left under its salt (test/run-salt.ts): the schema pairs and key prefixes
 * a whole file shares (a gateway's, the job fetcher's, the gateway examples'), which outlive
 * their tests. Graphile schemas `gwt_<salt>_…` and `ojs_example_…<salt>`, and Redis keys
 * `ojs-test:<salt>:…`; per-test data is removed by each
 * test already; and the BullMQ adapter's function libraries the run loaded, on the shared Redis
 * and the Cluster tests' nodes.
 * A run with a failure keeps everything for inspection and says where it is.
 * Services that do not answer (a run of the memory tests alone) are skipped.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadedLibraries } from '../adapters/bullmq/bullmq-script-command.js';
import { composedScripts } from '../adapters/bullmq/bullmq-script-set.js';
import { CLUSTER_NODES, deleteKeys, REDIS_URL } from './adapters/bullmq-test-redis.js';
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

/**
 * The BullMQ adapter's function libraries the run loaded (docs/decisions.md): this process's, and
 * the composed set's, which the run's child processes load too. Another run using one meanwhile
 * reloads it on its next call ("Function not found" is handled like NOSCRIPT).
 */
function runLibraries(): string[] {
  const libraries = new Set(loadedLibraries());
  try {
    const library = composedScripts()[0]?.library;
    if (library) libraries.add(library.name);
  } catch {
    // An installed BullMQ the adapter refuses: no library of its own.
  }
  return [...libraries];
}

async function withRedis(url: string, body: (redis: Redis) => Promise<void>): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await body(redis);
  } finally {
    redis.disconnect();
  }
}

async function deleteRedisLeftovers(): Promise<void> {
  const libraries = runLibraries();
  const deleteLibraries = async (redis: Redis) => {
    // On a Cluster replica the delete is refused (READONLY); its master's replicates.
    for (const name of libraries) await redis.call('FUNCTION', 'DELETE', name).catch(() => undefined);
  };
  await withRedis(REDIS_URL, async (redis) => {
    await deleteKeys(redis, `ojs-test:${RUN_SALT}:*`);
    await deleteLibraries(redis);
  });
  // The Cluster tests' nodes, node by node (FUNCTION is per node).
  await Promise.all(CLUSTER_NODES.map((node) => withRedis(`redis://${node}`, deleteLibraries).catch(() => undefined)));
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    const root = this.test?.parent as unknown as Suite | undefined;
    if (!root || anyFailed(root)) {
      console.log(`test data of this run kept for inspection: PostgreSQL schemas gwt_${RUN_SALT}_*, Redis keys ojs-test:${RUN_SALT}:*`);
      return;
    }
    await Promise.all([dropSchemas().catch(() => undefined), deleteRedisLeftovers().catch(() => undefined)]);
  },
};
