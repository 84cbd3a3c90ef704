/**
 * Telemetry of the Graphile Worker adapter: the `ojs.unique.adds` counter and a producer span per
 * unique add on every entry point (utils `addJob`/`addJobs`, `addJobWithClient`, task helpers,
 * the backend), every outcome, no key, args or meta in any attribute; the span's trace context
 * stored on the job (Graphile flags) and continued by a task through `runInJobTraceContext`.
 * Real PostgreSQL and Graphile runners; an in-memory metric reader and span exporter.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { SpanKind, trace } from '@opentelemetry/api';
import { runOnce } from 'graphile-worker';
import type pg from 'pg';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  runInJobTraceContext,
  withUniqueHelpers,
  type UniqueJobHelpers,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import type { EnqueueResult } from '../../src/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { addInBatches, addOneByOne, expectScenarioCounted, telemetryJob, type TelemetryJob } from '../telemetry/unique-add-scenario.js';

const FILE = fileURLToPath(import.meta.url);
const QUEUE = 'mail';

describe('graphile-worker adapter: telemetry (ojs.unique.adds, producer spans, trace context on the job)', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  const capture = useTelemetryCapture();
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils;

  beforeEach(async () => {
    pool = makePool(4);
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger });
  });
  afterEach(async () => {
    await utils.release();
    await pool.end();
  });

  const options = () => ({ uniqueSchema: schemas.current().uniqueSchema, workerSchema: schemas.current().graphileSchema });
  const spec = (job: TelemetryJob) => ({ queue: QUEUE, meta: job.meta, unique: job.unique });
  const entry = (job: TelemetryJob) => ({ identifier: job.type, payload: job.args, ...spec(job) });
  /** The Graphile flags of the job an add returned. */
  const flagsOf = async (result: EnqueueResult): Promise<string[]> => {
    const { graphileSchema } = schemas.current();
    const id = await createGraphileWorkerBackend({ pgPool: pool, ...options(), migrate: false }).graphileJobId(result.job.id);
    const { rows } = await pool.query<{ flags: Record<string, true> | null }>(
      `select flags from "${graphileSchema}"._private_jobs where id = $1`,
      [id],
    );
    return Object.keys(rows[0]?.flags ?? {});
  };
  const preset = () => ({ extends: [makeUniqueJobsPreset({ uniqueSchema: schemas.current().uniqueSchema })] });

  it('makeUniqueWorkerUtils().addJob: every outcome counted once', async function () {
    await addOneByOne((job) => utils.addJob(job.type, job.args, spec(job)));
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it('makeUniqueWorkerUtils().addJobs: every outcome counted once; a batch a duplicate refused counts only the rejected job', async function () {
    await addInBatches((jobs) => utils.addJobs(jobs.map(entry) as never), true);
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it('addJobWithClient: every outcome counted once', async function () {
    const client = await pool.connect();
    try {
      await addOneByOne(async (job) => {
        await client.query('begin');
        try {
          const result = await addJobWithClient(client, job.type, job.args, spec(job), options());
          await client.query('commit');
          return result;
        } catch (error) {
          await client.query('rollback');
          throw error;
        }
      });
    } finally {
      client.release();
    }
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  /** A task list whose driver task runs the test's `fn` with its helpers, in a job a real runner runs. */
  const taskHelpers = () => {
    let step: (helpers: UniqueJobHelpers) => Promise<void> = async () => undefined;
    const taskList = withUniqueHelpers({ 'tel.driver': (_payload, helpers) => step(helpers) }, options());
    return async (fn: (helpers: UniqueJobHelpers) => Promise<unknown>): Promise<void> => {
      let failure: { error: unknown } | undefined;
      step = async (helpers) => {
        try {
          await fn(helpers);
        } catch (error) {
          failure = { error };
        }
      };
      await utils.addJob('tel.driver', {});
      await runOnce({ pgPool: pool, schema: schemas.current().graphileSchema, taskList, logger: quietLogger, preset: preset() });
      if (failure) throw failure.error;
    };
  };

  it("withUniqueHelpers: a task's helpers.addJob counts every outcome once", async function () {
    const inTask = taskHelpers();
    await addOneByOne((job) => inTask((helpers) => helpers.addJob(job.type, job.args, spec(job))));
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it("withUniqueHelpers: a task's helpers.addJobs counts every outcome once; a refused batch only its rejected job", async function () {
    const inTask = taskHelpers();
    await addInBatches((jobs) => inTask((helpers) => helpers.addJobs(jobs.map(entry) as never)), true);
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it('createGraphileWorkerBackend().enqueue: every outcome counted once', async function () {
    const backend = createGraphileWorkerBackend({ pgPool: pool, ...options() });
    try {
      await addOneByOne((job) => backend.enqueue({ ...job, queue: QUEUE }));
    } finally {
      await backend.close();
    }
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it('createGraphileWorkerBackend().enqueueMany: every outcome counted once; a refused batch only its rejected job', async function () {
    const backend = createGraphileWorkerBackend({ pgPool: pool, ...options() });
    try {
      await addInBatches((jobs) => backend.enqueueMany(jobs.map((job) => ({ ...job, queue: QUEUE }))), true);
    } finally {
      await backend.close();
    }
    await expectScenarioCounted(capture, 'graphile-worker', QUEUE);
  });

  it("a producer span per unique add, shaped as BullMQ's add span, with the outcome; a deduplicated or rejected add's names the existing job", async function () {
    const first = (await utils.addJob(
      'tel.deduplicated',
      telemetryJob('deduplicated').args,
      spec(telemetryJob('deduplicated')),
    )) as EnqueueResult;
    const again = (await utils.addJob(
      'tel.deduplicated',
      telemetryJob('deduplicated').args,
      spec(telemetryJob('deduplicated')),
    )) as EnqueueResult;
    expect(again.job.id).to.equal(first.job.id);
    const held = (await utils.addJob('tel.rejected', telemetryJob('rejected').args, spec(telemetryJob('rejected')))) as EnqueueResult;
    const refused = await utils
      .addJob('tel.rejected', telemetryJob('rejected').args, spec(telemetryJob('rejected')))
      .catch((error: unknown) => error);
    expect(refused).to.have.property('existingJobId', held.job.id);
    await utils.addJob('plain', {});

    const spans = capture.spans();
    // A plain add (no policy) is Graphile's own: no span.
    expect(spans.map((span) => span.name)).to.deep.equal([
      'add mail.tel.deduplicated',
      'add mail.tel.deduplicated',
      'add mail.tel.rejected',
      'add mail.tel.rejected',
    ]);
    const attributes = (type: string, id: string, outcome: string) => ({
      'messaging.system': 'graphile-worker',
      'messaging.destination.name': QUEUE,
      'messaging.operation.name': 'add',
      'ojs.job.type': type,
      'messaging.message.id': id,
      'ojs.unique.outcome': outcome,
    });
    expect(spans.map((span) => span.attributes)).to.deep.equal([
      attributes('tel.deduplicated', first.job.id, 'created'),
      attributes('tel.deduplicated', first.job.id, 'deduplicated'),
      attributes('tel.rejected', held.job.id, 'created'),
      attributes('tel.rejected', held.job.id, 'rejected'),
    ]);
    expect(spans.map((span) => span.kind)).to.deep.equal(Array(4).fill(SpanKind.PRODUCER));
    expect(spans[3]!.events.map((event) => event.name)).to.deep.equal(['exception']);
    await capture.expectNoSecrets([telemetryJob('rejected').args.account, telemetryJob('rejected').meta.note, first.job.uniqueness_key!]);
  });

  it("stores the add span's trace context on the job (Graphile flags), and a task continues the trace with runInJobTraceContext", async function () {
    const tracer = trace.getTracer('test');
    const job = telemetryJob('created');
    const { traceId, result } = await tracer.startActiveSpan('caller', async (span) => {
      const added = (await utils.addJob(job.type, job.args, { ...spec(job), flags: ['mine'] })) as EnqueueResult;
      span.end();
      return { traceId: span.spanContext().traceId, result: added };
    });
    const add = capture.spans().find((span) => span.name === 'add mail.tel.created')!;
    expect(add.spanContext().traceId).to.equal(traceId);
    // The caller's own flags are kept beside the context.
    expect((await flagsOf(result)).sort()).to.deep.equal(['mine', `otel:traceparent=00-${traceId}-${add.spanContext().spanId}-01`]);

    const taskList = {
      [job.type]: (_payload: unknown, helpers: { job: { flags: Record<string, true> | null } }) =>
        runInJobTraceContext(helpers.job, () =>
          tracer.startActiveSpan('process tel.created', { kind: SpanKind.CONSUMER }, async (span) => {
            span.end();
          }),
        ),
    };
    await runOnce({
      pgPool: pool,
      schema: schemas.current().graphileSchema,
      taskList: taskList as never,
      logger: quietLogger,
      preset: preset(),
    });
    const processed = capture.spans().find((span) => span.name === 'process tel.created')!;
    expect({ traceId: processed.spanContext().traceId, parent: processed.parentSpanContext?.spanId }).to.deep.equal({
      traceId,
      parent: add.spanContext().spanId,
    });
  });

  it('stores no trace context and makes no span without a tracer provider', async function () {
    trace.disable();
    try {
      const job = telemetryJob('created');
      const result = (await utils.addJob(job.type, job.args, spec(job))) as EnqueueResult;
      expect(await flagsOf(result)).to.deep.equal([]);
      expect(capture.spans()).to.deep.equal([]);
      // Counted all the same: metrics and traces are registered apart.
      expect(await capture.count('created', job.type, QUEUE, 'graphile-worker')).to.equal(1);
      // A task runs as it is without a stored context.
      expect(runInJobTraceContext({ flags: null }, () => 42)).to.equal(42);
    } finally {
      capture.withTracerProvider();
    }
  });
});
