/**
 * The BullMQ adapter on a real 3-master Redis Cluster (REDIS_CLUSTER_NODES, default
 * 127.0.0.1:7101-7103, started by scripts/services.sh; empty skips these tests): the conformance
 * suite and the concurrency rounds with a hash-tagged prefix, `createBullMQBackend` given a
 * `Cluster`, `removeUniquenessIndex` across masters, and the typed errors for what a cluster
 * refuses (keys in several slots, a node that does not own the slot).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { FlowProducer, Queue, Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { expect } from 'chai';
import createSubject, { clusterOf } from '../conformance/subjects/bullmq.js';
import { createBullMQBackend, removeUniquenessIndex, withUniqueness, type UniqueQueue } from '../../adapters/bullmq/index.js';
import { queueClient } from '../../adapters/bullmq/bullmq-host.js';
import { scriptModeOf } from '../../adapters/bullmq/bullmq-script-command.js';
import { composedScripts, flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { BackendError, DuplicateJobError, isBackendError, type EnqueueResult } from '../../src/index.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { rejection } from '../conformance/suite-context.js';
import { RUN_SALT } from '../run-salt.js';
import { raceRound } from './bullmq-concurrency-burst.js';
import { CLUSTER_NODES, deleteKeys } from './bullmq-test-redis.js';

const FILE = 'bullmq-cluster.test.ts';
const ADDS = 500;
const ROUNDS = 10;

/** `ojs-test:<salt>:<sha1(file + title)>`, hash-tagged or not. */
function prefixFor(title: string, tagged = true): string {
  const name = `ojs-test:${RUN_SALT}:${createHash('sha1').update(`${FILE}\0${title}`).digest('hex').slice(0, 20)}`;
  return tagged ? `{${name}}` : name;
}

const describeCluster = CLUSTER_NODES.length > 0 ? describe : describe.skip;

describeCluster('bullmq adapter on a 3-master Redis Cluster', function () {
  describeConformance('bullmq on a 3-master Redis Cluster, hash-tagged prefix', ({ title }) =>
    createSubject({ prefix: prefixFor(title), cluster: CLUSTER_NODES }),
  );

  describe('entry points and cleanup', function () {
    this.timeout(30_000);
    let cluster: Cluster;
    let prefix: string;
    let plainPrefix: string;
    const closables: { close(): Promise<unknown> }[] = [];

    beforeEach(async function () {
      cluster = clusterOf(CLUSTER_NODES);
      prefix = prefixFor(this.currentTest!.fullTitle());
      plainPrefix = prefixFor(this.currentTest!.fullTitle(), false);
      await deleteKeys(cluster, `${prefix}:*`);
      await deleteKeys(cluster, `${plainPrefix}:*`);
    });

    afterEach(async function () {
      await Promise.all(closables.splice(0).map((closable) => closable.close()));
      if (this.currentTest?.state === 'passed') {
        await deleteKeys(cluster, `${prefix}:*`);
        await deleteKeys(cluster, `${plainPrefix}:*`);
      }
      await cluster.quit();
    });

    async function keysOf(pattern: string): Promise<string[]> {
      const keys: string[] = [];
      for (const node of cluster.nodes('master')) keys.push(...(await node.keys(pattern)));
      return keys.sort();
    }

    it('§8.1 createBullMQBackend given a Cluster uses it (not localhost:6379): enqueue, duplicates, getJob, cancel', async function () {
      const backend = createBullMQBackend({ connection: cluster, prefix });
      closables.push(backend);
      expect(backend.client).to.equal(cluster);
      const first = await backend.enqueue({ type: 'report', queue: 'mail', args: { n: 1 }, unique: { keys: ['type'] } });
      expect(first.outcome).to.equal('created');
      expect(
        await rejection(backend.enqueue({ type: 'report', queue: 'other', args: { n: 2 }, unique: { keys: ['type'] } })),
      ).to.be.instanceOf(DuplicateJobError);
      expect(
        (await backend.enqueue({ type: 'report', queue: 'other', args: {}, unique: { keys: ['type'], on_conflict: 'replace' } })).outcome,
      ).to.equal('replaced');
      expect((await backend.getJob(first.job.id))?.state).to.equal('cancelled');
      expect(await cluster.exists(`${prefix}:other:meta`)).to.equal(1);
      const standalone = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      try {
        expect(await standalone.keys(`${prefix}:*`)).to.deep.equal([]);
      } finally {
        await standalone.quit();
      }
    });

    it('on Redis 7 the scripts run as functions: a "Function not found" loads the library on every master, and the add is answered', async function () {
      const library = composedScripts()[0]!.library!;
      // Another run may hold it: deleted here, it is loaded again by whoever calls it next.
      for (const node of cluster.nodes('master')) await node.call('FUNCTION', 'DELETE', library.name).catch(() => undefined);
      const queue = withUniqueness(new Queue('fn', { connection: cluster as unknown as Redis, prefix }));
      closables.push(queue);
      const client = await queueClient(queue.unwrapped);
      const first = await queue.add('job', { n: 1 }, { unique: { on_conflict: 'ignore' } });
      for (let i = 0; i < 50 && scriptModeOf(client) !== 'functions'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(scriptModeOf(client)).to.equal('functions');
      expect((await queue.add('job', { n: 1 }, { unique: { on_conflict: 'ignore' } })).id).to.equal(first.id);
      for (const node of cluster.nodes('master')) {
        const listed = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', library.name)) as unknown[];
        expect(listed.length, `${node.options.host}:${node.options.port}`).to.equal(1);
      }
    });

    it('§8.1 withUniqueness on a Cluster-backed queue: adds, addBulk and a policy across queues, with a hash-tagged prefix', async function () {
      const a = withUniqueness(new Queue('a', { connection: cluster as unknown as Redis, prefix }));
      const b = withUniqueness(new Queue('b', { connection: cluster as unknown as Redis, prefix }));
      closables.push(a, b);
      const first = await a.add('sync', {}, { unique: { on_conflict: 'ignore' } });
      expect((await b.add('sync', {}, { unique: { on_conflict: 'ignore' } })).id).to.equal(first.id);
      const bulk = await b.addBulk([
        { name: 'x', data: {}, opts: { unique: {} } },
        { name: 'x', data: {}, opts: { unique: { on_conflict: 'ignore' } } },
        { name: 'plain', data: {} },
      ]);
      expect(bulk.map((job) => job.unique?.outcome ?? 'plain')).to.deep.equal(['created', 'deduplicated', 'plain']);
    });

    it('x_successor on a Cluster, hash-tagged prefix: kept beside the running job, added by BullMQ when it completes and by an OJS cancel', async function () {
      const backend = createBullMQBackend({ connection: cluster, prefix });
      closables.push(backend);
      const unique = { keys: ['type'], on_conflict: 'ignore', x_successor: 'latest' } as const;
      const worker = new Worker('default', null, { connection: cluster as unknown as Redis, prefix, autorun: false });
      closables.push(worker);
      const successorOf = (result: EnqueueResult) => (result.outcome === 'deduplicated' ? result.successor?.id : undefined);
      for (const end of ['complete', 'cancel'] as const) {
        const holder = await backend.enqueue({ type: end, args: { v: 1 }, unique });
        const job = await worker.getNextJob('token', { block: false });
        expect(job?.id).to.equal(holder.job.id);
        const id = successorOf(await backend.enqueue({ type: end, args: { v: 2 }, unique }));
        expect(id, end).to.be.a('string');
        if (end === 'complete') await job!.moveToCompleted('done', 'token', false);
        else await backend.cancel(holder.job.id);
        expect(await backend.getJob(id!), end).to.deep.include({ state: 'available', args: { v: 2 } });
        const again = await backend.enqueue({ type: end, args: { v: 3 }, unique });
        expect(again.job.id, end).to.equal(id);
        await backend.cancel(id!);
      }
    });

    it('§8.1 withUniqueness(flowProducer) on a Cluster, hash-tagged prefix: a flow with a unique child inserts it, the next deduplicates it', async function () {
      const flow = withUniqueness(new FlowProducer({ connection: cluster as unknown as Redis, prefix }));
      const children = new Queue('c', { connection: cluster as unknown as Redis, prefix });
      closables.push(flow, children);
      const report = () =>
        flow.add({
          name: 'report',
          queueName: 'p',
          children: [
            { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } } },
            { name: 'plain', queueName: 'c' },
          ],
        });
      if (flowScriptsProblem() !== null) {
        // BullMQ 6.0.0: no release step, a unique node under a parent is refused (bullmq-flows.test.ts).
        const error = await rejection(report());
        expect(isBackendError(error) && error.written).to.equal(false);
        expect(error.message).to.match(/releaseParentIfNoPendingDependencies/);
        return;
      }
      const first = await report();
      const second = await report();
      const [created, plain] = second.children!;
      expect(first.children![0]!.job.unique?.outcome).to.equal('created');
      expect(created!.job.unique).to.include({ outcome: 'deduplicated', existingJobId: first.children![0]!.job.id });
      expect(await cluster.smembers(`${prefix}:p:${second.job.id}:dependencies`)).to.deep.equal([`${prefix}:c:${plain!.job.id}`]);
      expect((await cluster.smembers(`${prefix}:p:${first.job.id}:dependencies`)).sort()).to.deep.equal(
        first.children!.map((child) => `${prefix}:c:${child.job.id}`).sort(),
      );
      expect(await children.getJobCounts('wait')).to.deep.equal({ wait: 3 });
      expect(await keysOf(`${prefix}:p:*`)).to.include(`${prefix}:p:${second.job.id}`);
    });

    it('§8.1 a flow with a unique child under a prefix without a hash tag: a typed BackendError that says to hash-tag the prefix; nothing of the flow written', async function () {
      const flow = withUniqueness(new FlowProducer({ connection: cluster as unknown as Redis, prefix: plainPrefix }));
      closables.push(flow);
      const error = await rejection(
        flow.add({
          name: 'report',
          queueName: 'p',
          children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: {} } }],
        }),
      );
      expect(isBackendError(error)).to.equal(true);
      if (flowScriptsProblem() === null) expect(error.message).to.match(/hash-tagged prefix/);
      // The meta hashes are the queues' own (BullMQ's Queue writes them when it connects).
      expect((await keysOf(`${plainPrefix}:*`)).filter((name) => !name.endsWith(':meta'))).to.deep.equal([]);
    });

    it('§8.1 keys of one add in several hash slots (no hash-tagged prefix): a typed BackendError that says to hash-tag the prefix, written: false', async function () {
      const backend = createBullMQBackend({ connection: cluster, prefix: plainPrefix });
      closables.push(backend);
      const error = await rejection(backend.enqueue({ type: 'report', queue: 'mail', args: {}, unique: {} }));
      expect(isBackendError(error), String(error)).to.equal(true);
      expect(error.message).to.contain('hash-tagged prefix').and.to.contain('{myapp}');
      expect((error as unknown as BackendError).written).to.equal(false);
      // Hash-tagged queue names keep a per-queue policy in one slot, but not one across queues.
      const queue = withUniqueness(new Queue('{mail}', { connection: cluster as unknown as Redis, prefix: plainPrefix }));
      closables.push(queue);
      expect((await queue.add('r', {}, { unique: { keys: ['type', 'queue'] } })).unique?.outcome).to.equal('created');
      const across = await rejection(queue.add('r', {}, { unique: { keys: ['type'] } }));
      expect(isBackendError(across), String(across)).to.equal(true);
      expect(across.message).to.contain('hash-tagged prefix');
    });

    it("§8.1 createBullMQBackend given one node's URL: a node that does not own the slot is a typed error saying to use a Cluster", async function () {
      const outcomes: string[] = [];
      for (const node of CLUSTER_NODES) {
        const backend = createBullMQBackend({ connection: `redis://${node}`, prefix });
        try {
          await backend.enqueue({ type: 'report', queue: 'mail', args: {}, unique: { keys: ['type', 'queue'] } });
          outcomes.push('created');
        } catch (error) {
          expect(isBackendError(error), String(error)).to.equal(true);
          expect((error as Error).message).to.contain('Cluster');
          expect((error as BackendError).written).to.equal(false);
          outcomes.push('typed');
        } finally {
          await backend.close();
        }
      }
      expect(outcomes.sort()).to.deep.equal(['created', 'typed', 'typed']);
    });

    it('§12 removeUniquenessIndex on a cluster deletes the sidecar keys on every master', async function () {
      // Hash-tagged queue names spread the queues' keys over the masters.
      const names = ['{a}', '{b}', '{c}', '{d}', '{e}', '{f}', '{g}', '{h}', '{i}'];
      const queues = names.map((name) => withUniqueness(new Queue(name, { connection: cluster as unknown as Redis, prefix: plainPrefix })));
      closables.push(...queues);
      for (const queue of queues) {
        await queue.add('r', { n: 1 }, { unique: { keys: ['type', 'queue', 'args'], on_conflict: 'replace' } });
        await queue.add('r', { n: 1 }, { unique: { keys: ['type', 'queue', 'args'], on_conflict: 'replace' } });
      }
      const owners = new Set<string>();
      for (const name of names) {
        const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', name.slice(1, -1)));
        const owner = ((await cluster.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]).find(
          ([from, to]) => slot >= from && slot <= to,
        )!;
        owners.add(`${owner[2][0]}:${owner[2][1]}`);
      }
      expect(owners.size, 'the queues span every master').to.equal(3);
      const before = await keysOf(`${plainPrefix}:*ojs:*`);
      let deleted = 0;
      for (const queue of queues) deleted += await removeUniquenessIndex(queue.unwrapped);
      deleted += await removeUniquenessIndex(queues[0]!.unwrapped, { global: true });
      expect(await keysOf(`${plainPrefix}:*ojs:*`)).to.deep.equal([]);
      expect(deleted).to.equal(before.length);
    });
  });

  describe('§8.1 strong uniqueness across processes and connections, on the cluster', function () {
    this.timeout(180_000);
    let child: ChildProcessWithoutNullStreams;
    let lines: AsyncIterator<string>;
    let local: UniqueQueue[];
    let observer: Queue;
    let connections: Cluster[];
    let prefix: string;

    beforeEach(async function () {
      prefix = prefixFor(this.currentTest!.fullTitle());
      connections = [clusterOf(CLUSTER_NODES), clusterOf(CLUSTER_NODES), clusterOf(CLUSTER_NODES)];
      await deleteKeys(connections[0]!, `${prefix}:*`);
      child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/adapters/bullmq-concurrency-producer.ts', prefix, '2', CLUSTER_NODES.join(',')],
        { stdio: 'pipe' },
      );
      child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
      lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      local = connections
        .slice(0, 2)
        .map((connection) => withUniqueness(new Queue('race', { connection: connection as unknown as Redis, prefix })));
      observer = new Queue('race', { connection: connections[2]! as unknown as Redis, prefix });
      expect((await lines.next()).value).to.equal('ready');
    });

    afterEach(async function () {
      child.stdin.end('exit\n');
      await new Promise((resolve) => child.once('exit', resolve));
      await Promise.all([...local, observer].map((queue) => queue.close()));
      if (this.currentTest?.state === 'passed') await deleteKeys(connections[0]!, `${prefix}:*`);
      await Promise.all(connections.map((connection) => connection.quit()));
    });

    const round = (strategy: string, n: number) => raceRound({ stdin: child.stdin, lines }, local, observer, strategy, n, ADDS);

    for (const strategy of ['reject', 'ignore', 'replace']) {
      it(`${strategy}: ${ROUNDS} rounds of ${ADDS} adds from two processes, exactly one live job per round, every outcome agrees with it`, async function () {
        for (let n = 0; n < ROUNDS; n++) {
          const { outcomes, live } = await round(strategy, n);
          expect(outcomes.filter((o) => o.outcome === 'error')).to.deep.equal([]);
          const created = outcomes.filter((o) => o.outcome === 'created');
          expect(created, `round ${n}`).to.have.length(1);
          expect(live, `round ${n}`).to.have.length(1);
          if (strategy === 'reject') {
            expect(live).to.deep.equal([created[0]!.id]);
            expect(outcomes.filter((o) => o.outcome === 'rejected' && o.existingJobId === created[0]!.id)).to.have.length(ADDS - 1);
          } else if (strategy === 'ignore') {
            expect(live).to.deep.equal([created[0]!.id]);
            expect(outcomes.filter((o) => o.outcome === 'deduplicated' && o.id === created[0]!.id)).to.have.length(ADDS - 1);
          } else {
            const replaced = outcomes.filter((o) => o.outcome === 'replaced').flatMap((o) => o.replacedIds!);
            expect(replaced).to.have.length(ADDS - 1);
            expect(new Set(replaced)).to.deep.equal(new Set(outcomes.map((o) => o.id!).filter((id) => id !== live[0])));
          }
        }
      });
    }
  });
});
