/**
 * Issue 9 on Graphile Worker: the seams a user reaches first. Replace meeting records that are
 * already terminal, the caller's transaction (and a pool where a client belongs), an unreachable
 * database, and Graphile-specific options refused before any I/O. Real PostgreSQL throughout;
 * the memory backend is the reference for outcomes.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { BackendError, InvalidUniquePolicyError, UNIQUE_STATE_GROUPS, createMemoryBackend, type EnqueueResult, type JobInput, type UniqueJobsBackend } from '../../src/index.js';
import { addJobWithClient, createGraphileWorkerBackend, makeUniqueWorkerUtils, type UniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../../examples/demo-backends/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  expect.fail('expected a rejection');
}

/** An outcome with ids replaced by the order in which the run first saw them, to compare backends. */
function shape(result: EnqueueResult, ids: Map<string, number>): unknown {
  const ordinal = (id: string | undefined) => {
    if (id === undefined) return undefined;
    if (!ids.has(id)) ids.set(id, ids.size);
    return ids.get(id);
  };
  const view = (job: { id: string; state: string; replaced_by?: string; completed_at?: string }) => ({
    id: ordinal(job.id),
    state: job.state,
    replaced_by: ordinal(job.replaced_by),
    completed: job.completed_at !== undefined,
  });
  if (result.outcome !== 'replaced') return { outcome: result.outcome, job: view(result.job) };
  return { outcome: result.outcome, job: view(result.job), replaced: view(result.replaced), also: (result.also_replaced ?? []).map(view) };
}

describe('graphile-worker: issue 9 seams', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils | null;
  const backends: UniqueJobsBackend[] = [];

  beforeEach(() => {
    pool = makePool(10);
    utils = null;
  });
  afterEach(async () => {
    for (const backend of backends.splice(0)) await backend.close();
    await utils?.release();
    await pool.end();
  });

  const makeBackend = () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const backend = createGraphileWorkerBackend({ pgPool: pool, schema: uniqueSchema, graphileSchema });
    backends.push(backend);
    return backend;
  };
  const makeUtils = async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger });
    return utils;
  };
  const count = async (sql: string, values: unknown[] = []) => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const text = sql.replaceAll(':gw', `"${graphileSchema}"`).replaceAll(':ou', `"${uniqueSchema}"`);
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from ${text}`, values);
    return rows[0]!.n;
  };

  /** Runs `steps` on memory and on Graphile; each step returns a shaped outcome or an error's name. */
  async function againstMemory(steps: (backend: UniqueJobsBackend, results: EnqueueResult[]) => Promise<void>): Promise<[unknown[], unknown[]]> {
    const run = async (backend: UniqueJobsBackend) => {
      const results: EnqueueResult[] = [];
      await steps(backend, results);
      const ids = new Map<string, number>();
      return results.map((result) => shape(result, ids));
    };
    const memory = createMemoryBackend();
    try {
      return [await run(memory), await run(makeBackend())];
    } finally {
      await memory.close();
    }
  }

  describe('§5.2 replace with a duplicate that is already terminal', () => {
    it('§5.2 replace with a cancelled duplicate (states: all): created, replaced, replaced, as memory', async () => {
      const job: JobInput = { type: 'resize', args: { image: 7 }, unique: { states: UNIQUE_STATE_GROUPS.all, on_conflict: 'replace' } };
      const [memory, graphile] = await againstMemory(async (backend, results) => {
        for (let i = 0; i < 3; i += 1) results.push(await backend.enqueue(job));
      });
      expect(memory.map((r) => (r as { outcome: string }).outcome)).to.deep.equal(['created', 'replaced', 'replaced']);
      expect(graphile).to.deep.equal(memory);
      // Still exactly one live job, and a fourth replace works too.
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect((await backends[0]!.enqueue(job)).outcome).to.equal('replaced');
      expect(await count(':gw._private_jobs')).to.equal(1);
    });

    it('§5.2 replace with mixed policies on one key (a default job, a cancelled completed-only job): as memory', async () => {
      const base = { type: 'sync', args: { account: 3 } };
      const [memory, graphile] = await againstMemory(async (backend, results) => {
        results.push(await backend.enqueue({ ...base, unique: {} }));
        const b = await backend.enqueue({ ...base, unique: { states: ['completed'] } });
        results.push(b);
        await backend.cancel(b.job.id);
        results.push(await backend.enqueue({ ...base, unique: { states: ['available', 'cancelled'], on_conflict: 'replace' } }));
      });
      expect(graphile).to.deep.equal(memory);
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect(await count(':ou.jobs where terminal_state is null')).to.equal(1);
    });
  });
});
