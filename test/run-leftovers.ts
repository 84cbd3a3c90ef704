/**
 * Root hooks and global fixtures (`require` in .mocharc.cjs) that give a test run its own
 * PostgreSQL databases and leave nothing behind when it passes.
 *
 * - Before a process's first file (each mocha worker of a parallel run, or the one process of a
 *   serial run): its database `ojs_test_<salt>_<worker>` is created (test/run-database.ts).
 * - Once the run has ended (global teardown, in mocha's main process), if every test and hook
 *   passed: the run's databases are dropped with all they hold (the Graphile schema pairs
 *   `gwt_<salt>_…`, the examples' `ojs_example_…<salt>`), the login roles the tests made, the
 *   Redis keys `ojs-test:<salt>:…` (per-test keys are deleted by each passing test already; these
 *   are the ones a whole file shares: a gateway's, the job fetcher's, the examples'), and the BullMQ
 *   adapter's function libraries the run loaded, on the shared Redis and the Cluster tests' nodes.
 * - A run with a failure keeps everything for inspection and says where it is.
 *
 * Services that do not answer (a run of the memory tests alone) are skipped.
 */
import { appendFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { Redis } from 'ioredis';
import { loadedLibraries } from '../adapters/bullmq/bullmq-script-command.js';
import { composedScripts } from '../adapters/bullmq/bullmq-script-set.js';
import { CLUSTER_NODES, deleteKeys, REDIS_URL } from './adapters/bullmq-test-redis.js';
import { dropRunDatabases, ensureProcessDatabase, runDatabases } from './run-database.js';
import { RUN_SALT } from './run-salt.js';

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

/** `OJS_TEST_TIMES=<path>`: each file's wall time in a parallel run, appended to <path> (how scripts/run-tests.mjs's order was measured). */
let fileStarted = 0;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(30_000);
    fileStarted = Date.now();
    // Each PostgreSQL connection names its test file (pg_stat_activity.application_name), also in the programs a test starts.
    const file = this.test?.parent?.suites[0]?.file;
    if (file) process.env.PGAPPNAME = basename(file).slice(0, 63);
    await ensureProcessDatabase();
  },
  afterAll(this: Mocha.Context): void {
    const path = process.env.OJS_TEST_TIMES;
    const file = this.test?.parent?.suites[0]?.file;
    if (path && file && process.env.MOCHA_WORKER_ID !== undefined) {
      appendFileSync(path, `${((Date.now() - fileStarted) / 1000).toFixed(1)}s ${relative(process.cwd(), file)}\n`);
    }
  },
};

/** Mocha's runner, as the global teardown sees it (`this`). */
interface RunEnd {
  failures: number;
}

export async function mochaGlobalTeardown(this: RunEnd): Promise<void> {
  if (this.failures > 0) {
    const databases = await runDatabases().catch(() => []);
    console.log(
      `test data of this run (salt ${RUN_SALT}) kept for inspection: PostgreSQL databases ${databases.length > 0 ? databases.join(', ') : `ojs_test_${RUN_SALT}_*`} (schemas gwt_${RUN_SALT}_*), Redis keys ojs-test:${RUN_SALT}:*`,
    );
    return;
  }
  const [dropped] = await Promise.all([dropRunDatabases().catch(() => []), deleteRedisLeftovers().catch(() => undefined)]);
  if (dropped.length > 0)
    console.log(`test run ${RUN_SALT} passed: dropped its databases ${dropped.join(', ')} and Redis keys ojs-test:${RUN_SALT}:*`);
}
