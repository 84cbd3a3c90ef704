/**
 * Issue 9 on Graphile Worker: the seams a user reaches first. Replace meeting records that are
 * already terminal, the caller's transaction (and a pool where a client belongs), an unreachable
 * database, and Graphile-specific options refused before any I/O. Real PostgreSQL throughout;
 * the memory backend is the reference for outcomes.
 */
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import {
  BackendError,
  InvalidJobInputError,
  UNIQUE_STATE_GROUPS,
  type EnqueueResult,
  type JobInput,
  type UniqueJobsBackend,
} from '../../src/index.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueWorkerUtils,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { rejection as rejectionOf } from '../conformance/suite-context.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

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

describe('graphile-worker: seams (entry points, transactions, outages, input)', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils | null;
  const backends: UniqueJobsBackend[] = [];

  beforeEach(() => {
    pool = makePool(4);
    utils = null;
  });
  afterEach(async () => {
    for (const backend of backends.splice(0)) await backend.close();
    await utils?.release();
    await pool.end();
  });

  const makeBackend = () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema });
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
  async function againstMemory(
    steps: (backend: UniqueJobsBackend, results: EnqueueResult[]) => Promise<void>,
  ): Promise<[unknown[], unknown[]]> {
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

  describe('§8.1 addJobWithClient needs a transaction of its own client', () => {
    const replace = { keys: ['type'] as 'type'[], on_conflict: 'replace' as const };
    const issuePaths = (error: Error) =>
      error instanceof InvalidJobInputError ? error.issues.map((issue) => issue.path) : [error.message];

    it('§8.1 refuses a pg.Pool and a client outside BEGIN … COMMIT (nothing written); 40 concurrent replaces in transactions leave one live job', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const options = { uniqueSchema, workerSchema: graphileSchema };
      // The reproduction: 40 concurrent replaces of one key through a pool.
      const viaPool = await Promise.allSettled(
        // @ts-expect-error a pg.Pool is not a client that can hold a transaction
        Array.from({ length: 40 }, (_, n) => addJobWithClient(pool, 'sync', { n }, { unique: replace }, options)),
      );
      for (const settled of viaPool) {
        expect(settled.status).to.equal('rejected');
        expect(issuePaths((settled as PromiseRejectedResult).reason)).to.deep.equal(['client']);
      }
      // A checked-out client in autocommit: each statement would be its own transaction.
      const loose = await pool.connect();
      try {
        const error = await rejectionOf(addJobWithClient(loose, 'sync', { n: 0 }, { unique: replace }, options));
        expect(error).to.be.instanceOf(InvalidJobInputError);
        expect(issuePaths(error)).to.deep.equal(['client']);
        expect(error.message).to.match(/BEGIN and COMMIT/);
      } finally {
        loose.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(0);
      expect(await count(':ou.jobs')).to.equal(0);
      // The supported way: each call in its own transaction. Exactly one live job.
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, async (_, n) => {
          const client = await pool.connect();
          try {
            await client.query('begin');
            const result = await addJobWithClient(client, 'sync', { n }, { unique: replace }, options);
            await client.query('commit');
            return result.outcome;
          } catch (error) {
            await client.query('rollback');
            throw error;
          } finally {
            client.release();
          }
        }),
      );
      expect(outcomes.filter((o) => o === 'created')).to.have.length(1);
      expect(outcomes.filter((o) => o === 'replaced')).to.have.length(39);
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect(await count(':ou.jobs where terminal_state is null')).to.equal(1);
    });

    it('§8.1 a failed enqueue inside the caller’s transaction is undone, and the caller can still commit its own rows', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const options = { uniqueSchema, workerSchema: graphileSchema };
      const client = await pool.connect();
      try {
        await client.query('begin');
        await addJobWithClient(client, 'mail', { n: 1 }, { id: 'taken', unique: {} }, options);
        // The id is taken: the ledger insert fails after Graphile's add_job wrote its row.
        const error = await rejectionOf(addJobWithClient(client, 'other', { n: 2 }, { id: 'taken', unique: {} }, options));
        expect(error).to.be.instanceOf(InvalidJobInputError);
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect(await count(':ou.jobs')).to.equal(1);
    });
  });

  describe('§2.2 Graphile options refused before any I/O, naming the option', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['flags not an array', { flags: 'urgent' }, 'spec.flags'],
      ['flags with a non-string', { flags: ['a', 7] }, 'spec.flags'],
      ['runAt an invalid Date', { runAt: new Date(Number.NaN) }, 'spec.runAt'],
      ['runAt beyond what PostgreSQL accepts', { runAt: new Date(8.64e15) }, 'spec.runAt'],
      ['runAt before year 1', { runAt: new Date(Date.parse('0001-01-01T00:00:00Z') - 1) }, 'spec.runAt'],
      ['runAt a string', { runAt: '2030-01-01T00:00:00Z' }, 'spec.runAt'],
      ['priority NaN', { priority: Number.NaN }, 'spec.priority'],
      ['priority beyond smallint', { priority: 40_000 }, 'spec.priority'],
      ['priority a fraction', { priority: 1.5 }, 'spec.priority'],
      ['maxAttempts NaN', { maxAttempts: Number.NaN }, 'spec.maxAttempts'],
      ['maxAttempts beyond smallint', { maxAttempts: 32_768 }, 'spec.maxAttempts'],
      ['maxAttempts 0', { maxAttempts: 0 }, 'spec.maxAttempts'],
      ['jobKey with unique', { jobKey: 'k' }, 'spec.jobKey'],
      ['jobKeyMode with unique', { jobKeyMode: 'replace' }, 'spec.jobKeyMode'],
      ['queueName not a string', { queueName: 5 }, 'spec.queueName'],
    ];
    it('§2.2 utils.addJob and addJobWithClient: InvalidJobInputError naming spec.<option>, nothing written; addJobs names the entry', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const client = await pool.connect();
      try {
        await client.query('begin');
        for (const [label, options, path] of cases) {
          const spec = { ...options, unique: {} } as never;
          for (const [via, call] of [
            ['addJob', () => u.addJob('t', {}, spec)],
            ['addJobWithClient', () => addJobWithClient(client, 't', {}, spec, { uniqueSchema, workerSchema: graphileSchema })],
            [
              'addJobs',
              () =>
                u.addJobs([
                  { identifier: 't', payload: {}, unique: {} },
                  { identifier: 't', payload: {}, ...(spec as object) },
                ]),
            ],
          ] as const) {
            const error = await rejectionOf(call());
            expect(error, `${label} via ${via}`).to.be.instanceOf(InvalidJobInputError);
            const expected = via === 'addJobs' ? path.replace('spec', '[1]') : path;
            expect(issuePathsOf(error), `${label} via ${via}`).to.include(expected);
          }
        }
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(0);
      expect(await count(':ou.jobs')).to.equal(0);
      expect(await count(':ou.heads')).to.equal(0);
    });

    it('§2.2 unique: null is no policy: Graphile’s own addJob, no ledger row, on utils.addJob, addJobs and addJobWithClient', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const job = await u.addJob('plain', { n: 1 }, { unique: null });
      expect(job).to.have.property('task_identifier', 'plain');
      const jobs = await u.addJobs([{ identifier: 'plain', payload: { n: 2 }, unique: null } as never]);
      expect(jobs).to.have.length(1);
      const client = await pool.connect();
      try {
        await client.query('begin');
        const viaClient = await addJobWithClient(client, 'plain', { n: 3 }, { unique: null } as never, {
          uniqueSchema,
          workerSchema: graphileSchema,
        });
        expect(viaClient).to.have.property('task_identifier', 'plain');
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(3);
      expect(await count(':ou.jobs')).to.equal(0);
      expect(await count(':ou.heads')).to.equal(0);
    });

    it('§2.2 only own properties of a spec are read: an inherited unique or queue is not input', async () => {
      const u = await makeUtils();
      const inheritedUnique = Object.create({ unique: {} }) as object;
      expect(await u.addJob('plain', {}, inheritedUnique)).to.have.property('task_identifier', 'plain');
      expect(await count(':ou.jobs')).to.equal(0);
      const spec = Object.assign(Object.create({ queue: 'inherited', flags: 'not an array' }) as object, {
        unique: { keys: ['type', 'queue'] },
      });
      const result = await u.addJob('own', {}, spec as never);
      expect(result.job.queue).to.equal('default');
    });

    it('§4 a null payload hashes (and is stored as) null on every entry point, the same key as createGraphileWorkerBackend and memory', async () => {
      const u = await makeUtils();
      const backend = makeBackend();
      const memory = createMemoryBackend();
      try {
        const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };
        const viaMemory = await memory.enqueue({ type: 'n', args: null, unique });
        const viaUtils = await u.addJob('n', null, { unique });
        expect(viaUtils.outcome).to.equal('created');
        expect(viaUtils.job.uniqueness_key).to.equal(viaMemory.job.uniqueness_key);
        expect(viaUtils.job.args).to.equal(null);
        const viaBackend = await backend.enqueue({ type: 'n', args: null, unique });
        expect(viaBackend).to.deep.include({ outcome: 'deduplicated' });
        expect(viaBackend.job.id).to.equal(viaUtils.job.id);
        // {} is another key (as on memory); a missing payload is Graphile's default, {}.
        expect((await u.addJob('n', {}, { unique })).outcome).to.equal('created');
        expect((await u.addJob('n', undefined, { unique })).outcome).to.equal('deduplicated');
      } finally {
        await memory.close();
      }
    });
  });

  describe('§12 an unreachable database is a typed error, and every call settles', () => {
    it('§12 makeUniqueWorkerUtils on a port where nothing listens: BackendError, written false (not the raw pg error)', async () => {
      const error = await rejectionOf(
        makeUniqueWorkerUtils({ connectionString: 'postgres://postgres@127.0.0.1:1/test', logger: quietLogger }),
      );
      expect(error).to.be.instanceOf(BackendError).and.include({ written: false });
      expect(error.message).to.match(/ECONNREFUSED/);
    });

    it('§12 a server that accepts and never answers: utils and backend settle after connectionTimeoutMillis with a BackendError', async () => {
      const silent = net.createServer(() => undefined);
      const sockets = new Set<net.Socket>();
      silent.on('connection', (socket) => sockets.add(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const url = `postgres://postgres@127.0.0.1:${(silent.address() as net.AddressInfo).port}/test`;
      try {
        const viaUtils = await rejectionOf(
          makeUniqueWorkerUtils({ connectionString: url, connectionTimeoutMillis: 300, logger: quietLogger }),
        );
        expect(viaUtils).to.be.instanceOf(BackendError).and.include({ written: false });
        const backend = createGraphileWorkerBackend({ connectionString: url, connectionTimeoutMillis: 300 });
        backends.push(backend);
        for (const call of [() => backend.enqueue({ type: 't', args: {}, unique: {} }), () => backend.getJob('1'), () => backend.ready()]) {
          expect(await rejectionOf(call())).to.be.instanceOf(BackendError);
        }
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    });
  });
});

function issuePathsOf(error: Error): string[] {
  return error instanceof InvalidJobInputError ? error.issues.map((issue) => issue.path) : [];
}
