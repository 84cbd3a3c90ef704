/**
 * Telemetry of the memory backend: the `ojs.unique.adds` counter and a producer span per unique
 * add (`enqueue`, `enqueueMany`), every outcome, no key, args or meta in any attribute. An
 * in-memory metric reader and span exporter, no collector.
 */
import { expect } from 'chai';
import { SpanKind, trace } from '@opentelemetry/api';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import { isDuplicateJobError } from '../../src/index.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { addInBatches, addOneByOne, expectScenarioCounted, telemetryJob } from '../telemetry/unique-add-scenario.js';

describe('memory backend: telemetry (ojs.unique.adds and producer spans)', function () {
  const capture = useTelemetryCapture();
  const queue = 'mail';

  it('enqueue: every outcome counted once, with its type, queue and system', async function () {
    const backend = createMemoryBackend();
    await addOneByOne((job) => backend.enqueue({ ...job, queue }));
    await expectScenarioCounted(capture, 'memory', queue);
  });

  it('enqueueMany: every outcome counted once; a batch a duplicate refused counts only the rejected job', async function () {
    const backend = createMemoryBackend();
    await addInBatches((jobs) => backend.enqueueMany(jobs.map((job) => ({ ...job, queue }))), true);
    await expectScenarioCounted(capture, 'memory', queue);
    // The job undone with the refused batch was never added.
    expect(backend.jobs().filter((job) => job.type === 'tel.undone')).to.have.length(0);
  });

  it("a producer span per unique add, named and shaped as BullMQ's add span, with the outcome and the job returned or met", async function () {
    const backend = createMemoryBackend();
    const first = await backend.enqueue({ ...telemetryJob('deduplicated'), queue });
    const again = await backend.enqueue({ ...telemetryJob('deduplicated'), queue });
    expect(again.job.id).to.equal(first.job.id);
    await backend.enqueue({ ...telemetryJob('rejected'), queue });
    const refused = await backend.enqueue({ ...telemetryJob('rejected'), queue }).catch((error: unknown) => error);
    expect(isDuplicateJobError(refused)).to.equal(true);
    await backend.enqueue({ type: 'plain', args: [] });

    const spans = capture.spans();
    // The plain job (no policy) makes none.
    expect(spans.map((span) => span.name)).to.deep.equal([
      'add mail.tel.deduplicated',
      'add mail.tel.deduplicated',
      'add mail.tel.rejected',
      'add mail.tel.rejected',
    ]);
    const base = { 'messaging.system': 'memory', 'messaging.destination.name': 'mail', 'messaging.operation.name': 'add' };
    expect(spans[0]!.attributes).to.deep.equal({
      ...base,
      'ojs.job.type': 'tel.deduplicated',
      'messaging.message.id': first.job.id,
      'ojs.unique.outcome': 'created',
    });
    expect(spans[1]!.attributes).to.deep.equal({
      ...base,
      'ojs.job.type': 'tel.deduplicated',
      'messaging.message.id': first.job.id,
      'ojs.unique.outcome': 'deduplicated',
    });
    expect(spans[3]!.attributes).to.deep.equal({
      ...base,
      'ojs.job.type': 'tel.rejected',
      'messaging.message.id': (refused as { existingJobId: string }).existingJobId,
      'ojs.unique.outcome': 'rejected',
    });
    expect(spans[3]!.events.map((event) => event.name)).to.deep.equal(['exception']);
    for (const span of spans) expect(span.kind).to.equal(SpanKind.PRODUCER);
  });

  it("the spans are children of the caller's span", async function () {
    const backend = createMemoryBackend();
    const traceId = await trace.getTracer('caller').startActiveSpan('caller', async (span) => {
      await backend.enqueue({ ...telemetryJob('created'), queue });
      span.end();
      return span.spanContext().traceId;
    });
    const add = capture.spans().find((span) => span.name === 'add mail.tel.created')!;
    expect(add.spanContext().traceId).to.equal(traceId);
    expect(add.parentSpanContext?.spanId).to.equal(
      capture
        .spans()
        .find((span) => span.name === 'caller')!
        .spanContext().spanId,
    );
  });

  it('counts nothing without a meter provider, and counts once one is registered after the first add', async function () {
    const backend = createMemoryBackend();
    capture.withoutMeterProvider();
    await backend.enqueue({ ...telemetryJob('created'), queue });
    capture.withMeterProvider();
    expect(await capture.adds()).to.deep.equal([]);
    await backend.enqueue({ ...telemetryJob('created'), args: { account: 'other', n: 2 }, queue });
    expect(await capture.count('created', 'tel.created', queue, 'memory')).to.equal(1);
  });
});
