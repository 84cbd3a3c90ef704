/**
 * Report-only policies (`x_report_only`) on BullMQ: `withUniqueness(queue)` `add`, `addBulk`, a
 * lone flow node, the wrapper's `reportOnly` and a registered policy, and the backend's
 * `enqueue`: always inserted, `wouldBe` on the outcome, no enforced key held, counted as what
 * the policy would have done. Real Redis.
 */
import { expect } from 'chai';
import { FlowProducer } from 'bullmq';
import { createBullMQBackend, readUniqueFields, withUniqueness, type UniqueJob } from '../../adapters/bullmq/index.js';
import { InvalidJobInputError } from '../../src/index.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { expectReportOnlyScenario, type ReportOnlyAdd } from '../report-only-scenario.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-report-only.test.ts';
const QUEUE = 'reports';
const normalised = (job: { id?: string; unique?: object }): ReportOnlyAdd => ({ ...(job.unique as ReportOnlyAdd), id: job.id! });

describe('bullmq adapter: report-only policies', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const capture = useTelemetryCapture();
  const waiting = async () => (await ctx.queue(QUEUE).getJobCounts('wait')).wait!;
  const duplicateCount = async (id: string) => (await readUniqueFields(ctx.queue(QUEUE), id))?.duplicate_count || undefined;

  it('withUniqueness add: always inserts, wouldBe on job.unique, enforcing later is clean', async () => {
    const queue = withUniqueness(ctx.queue(QUEUE), { countDuplicates: true });
    await expectReportOnlyScenario((type, data, unique) => queue.add(type, data, { unique }).then(normalised), {
      type: 'report.build',
      queue: QUEUE,
      system: 'bullmq',
      capture,
      jobs: waiting,
      duplicateCount,
    });
  });

  it('withUniqueness addBulk: the same, entry by entry', async () => {
    const queue = withUniqueness(ctx.queue(QUEUE), { countDuplicates: true });
    await expectReportOnlyScenario(
      async (type, data, unique) => {
        const [job] = await queue.addBulk([{ name: type, data, opts: { unique } }]);
        if (job!.unique?.error) throw job!.unique.error;
        return normalised(job!);
      },
      { type: 'report.build', queue: QUEUE, system: 'bullmq', capture, jobs: waiting, duplicateCount },
    );
  });

  it('createBullMQBackend enqueue: the same; enqueueMany refuses it, naming the field', async () => {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, countDuplicates: true });
    ctx.closeLater(backend);
    await expectReportOnlyScenario(
      (type, args, unique) => backend.enqueue({ type, args, queue: QUEUE, unique }).then((result) => ({ ...result, id: result.job.id })),
      { type: 'report.build', queue: QUEUE, system: 'bullmq', capture, jobs: waiting, duplicateCount },
    );
    const error = await rejection(backend.enqueueMany([{ type: 'x', args: [], unique: { x_report_only: true } }]));
    expect(error).to.be.instanceOf(InvalidJobInputError);
    expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('[0].unique.x_report_only');
  });

  it('a lone flow node is the queue add: report-only there too', async () => {
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }), { countDuplicates: true });
    ctx.closeLater(flows);
    await expectReportOnlyScenario(
      (type, data, unique) => flows.add({ name: type, queueName: QUEUE, data, opts: { unique } }).then((node) => normalised(node.job)),
      { type: 'report.build', queue: QUEUE, system: 'bullmq', capture, jobs: waiting, duplicateCount },
    );
  });

  it("the wrapper's reportOnly marks every policy through it: a registered one, the queue default, an add's own", async () => {
    const queue = withUniqueness(ctx.queue(QUEUE), {
      policies: { 'report.build': { keys: ['type'], on_conflict: 'ignore' } },
      reportOnly: true,
    });
    const first = (await queue.add('report.build', {})) as unknown as UniqueJob;
    const second = (await queue.add('report.build', {})) as unknown as UniqueJob;
    expect(second.unique).to.include({ outcome: 'created', reportOnly: true, wouldBe: 'deduplicated', existingJobId: first.id });
    const own = await queue.add('other', {}, { unique: { keys: ['type'] } });
    const ownAgain = await queue.add('other', {}, { unique: { keys: ['type'] } });
    expect(ownAgain.unique).to.include({ reportOnly: true, wouldBe: 'rejected', existingJobId: own.id });
    expect(await waiting()).to.equal(4);
    // The plain job of a report-only duplicate holds no key: only the request token of its add.
    const hash = await ctx.redis.hgetall(`${ctx.prefix}:${QUEUE}:${second.id}`);
    expect(Object.keys(hash).filter((field) => field.startsWith('ojs'))).to.deep.equal(['ojsReq']);
  });
});
