/**
 * The `ojs.unique.adds` counter on every BullMQ entry point: `withUniqueness(queue).add` and
 * `addBulk`, a child added with `opts.parent`, flows (a lone root, a tree, `addBulk`), job
 * schedulers (the relay processor) and `createBullMQBackend` (`enqueue`, `enqueueMany`); every
 * outcome, each add counted once, no key, args or meta in any attribute. BullMQ's own producer
 * spans are test/adapters/bullmq-telemetry.test.ts's. An in-memory metric reader, real Redis.
 */
import { expect } from 'chai';
import { FlowProducer } from 'bullmq';
import { fileURLToPath } from 'node:url';
import { createBullMQBackend, makeUniqueSchedulerProcessor, withUniqueness, type RelayResult } from '../../adapters/bullmq/index.js';
import { isDuplicateJobError } from '../../src/index.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import {
  addInBatches,
  addOneByOne,
  expectScenarioCounted,
  FIRST_ADDS,
  SECOND_ADDS,
  telemetryJob,
  type TelemetryJob,
} from '../telemetry/unique-add-scenario.js';
import { useRedisPrefix } from './bullmq-test-redis.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';

const FILE = fileURLToPath(import.meta.url);
const QUEUE = 'mail';

describe('bullmq adapter: the ojs.unique.adds counter on every entry point', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const capture = useTelemetryCapture();

  const opts = (job: TelemetryJob) => ({ unique: job.unique, ojsMeta: job.meta });
  const flowProducer = () => {
    const producer = withUniqueness(new FlowProducer({ connection: ctx.connect(), prefix: ctx.prefix }));
    ctx.closeLater(producer);
    return producer;
  };

  it('withUniqueness(queue).add: every outcome counted once', async function () {
    const queue = withUniqueness(ctx.queue(QUEUE));
    await addOneByOne((job) => queue.add(job.type, job.args, opts(job)));
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('withUniqueness(queue).addBulk: each entry counted with its own outcome (the batch is not all-or-nothing)', async function () {
    const queue = withUniqueness(ctx.queue(QUEUE));
    await addInBatches(async (jobs) => {
      const added = await queue.addBulk([
        ...jobs.map((job) => ({ name: job.type, data: job.args, opts: opts(job) })),
        { name: 'plain', data: {} },
      ]);
      // A rejected entry is reported, not thrown.
      const rejected = added.find((job) => job.unique?.outcome === 'rejected');
      if (rejected) expect(isDuplicateJobError(rejected.unique!.error)).to.equal(true);
    }, false);
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('the native path (BullMQ deduplication key) and the duplicate probe count as the full add does', async function () {
    const queue = withUniqueness(ctx.queue(QUEUE));
    const unique = { keys: ['type', 'queue', 'args'] } as const;
    await queue.add('native', { n: 1 }, { unique });
    // The first duplicate goes through unique-add, the next ones through the probe.
    for (let i = 0; i < 3; i++)
      await queue.add('native', { n: 1 }, { unique }).catch((error: unknown) => expect(isDuplicateJobError(error)).to.equal(true));
    expect(await capture.count('created', 'native', QUEUE, 'bullmq')).to.equal(1);
    expect(await capture.count('rejected', 'native', QUEUE, 'bullmq')).to.equal(3);
  });

  it('a child added with opts.parent (a one-node unique flow) is counted once', async function () {
    const queue = withUniqueness(ctx.queue(QUEUE));
    const parent = await flowProducer().add({
      name: 'parent',
      queueName: QUEUE,
      data: {},
      children: [{ name: 'first', queueName: QUEUE, data: {} }],
    });
    const job = telemetryJob('deduplicated');
    const child = { ...opts(job), parent: { id: parent.job.id!, queue: `${ctx.prefix}:${QUEUE}` } };
    await queue.add(job.type, job.args, child);
    await queue.add(job.type, job.args, child);
    expect((await capture.adds()).map(({ attributes, value }) => [attributes['ojs.unique.outcome'], value])).to.deep.equal([
      ['created', 1],
      ['deduplicated', 1],
    ]);
  });

  it('flows: a lone unique root, each counted once', async function () {
    const producer = flowProducer();
    await addOneByOne((job) => producer.add({ name: job.type, queueName: QUEUE, data: job.args, opts: opts(job) }));
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('flows: unique children of a tree, counted once each; a tree a duplicate refused counts only the rejected node', async function () {
    // Unique nodes under a parent need a BullMQ that ships releaseParentIfNoPendingDependencies.
    if (flowScriptsProblem() !== null) this.skip();
    const producer = flowProducer();
    await addInBatches(
      (jobs) =>
        producer.add({
          name: 'parent',
          queueName: QUEUE,
          data: {},
          children: jobs.map((job) => ({ name: job.type, queueName: QUEUE, data: job.args, opts: opts(job) })),
        }),
      true,
    );
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('flows: addBulk of lone unique roots, each counted once', async function () {
    const producer = flowProducer();
    const flow = (job: TelemetryJob) => ({ name: job.type, queueName: QUEUE, data: job.args, opts: opts(job) });
    await producer.addBulk(FIRST_ADDS.map(flow));
    await producer.addBulk(SECOND_ADDS.filter((job) => job.type !== 'tel.rejected').map(flow));
    // Each flow is its own add: a rejected one throws (after the flows before it were added).
    const refused = await producer.addBulk([flow(telemetryJob('rejected'))]).catch((error: unknown) => error);
    expect(isDuplicateJobError(refused)).to.equal(true);
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it("job schedulers: each tick's add through the relay counted once (the relay job itself is not)", async function () {
    const queue = withUniqueness(ctx.queue(QUEUE));
    const processor = makeUniqueSchedulerProcessor(queue, async () => 'not a relay');
    let scheduler = 0;
    await addOneByOne(async (job) => {
      const relay = await queue.upsertJobScheduler(
        `s${++scheduler}`,
        { every: 60_000 },
        { name: job.type, data: job.args, opts: opts(job) },
      );
      const result = (await processor(relay, 'token')) as RelayResult;
      // The first add of each type is created, the second has the outcome its type names (a rejected one is reported).
      expect(result.outcome).to.equal(scheduler <= 5 ? 'created' : job.type.slice('tel.'.length));
    });
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('createBullMQBackend().enqueue: every outcome counted once', async function () {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
    await addOneByOne((job) => backend.enqueue({ ...job, queue: QUEUE }));
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });

  it('createBullMQBackend().enqueueMany: every outcome counted once; a refused batch counts only its rejected job', async function () {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
    await addInBatches(
      (jobs) => backend.enqueueMany([...jobs.map((job) => ({ ...job, queue: QUEUE })), { type: 'plain', args: [], queue: QUEUE }]),
      true,
    );
    await expectScenarioCounted(capture, 'bullmq', QUEUE);
  });
});
