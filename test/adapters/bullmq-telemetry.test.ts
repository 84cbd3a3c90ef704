/**
 * BullMQ's telemetry option (bullmq-otel) on a wrapped queue: a unique add makes BullMQ's producer
 * span, with BullMQ's names and attributes plus the outcome (never the key, args or meta), and
 * stores the caller's trace context on the job, so the worker's span joins the caller's trace.
 * An in-memory span exporter, no collector.
 */
import { expect } from 'chai';
import { context, propagation, SpanKind, trace, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Job, Worker } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { fileURLToPath } from 'node:url';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { isDuplicateJobError } from '../../src/index.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = fileURLToPath(import.meta.url);

describe('bullmq adapter: telemetry (BullMQ telemetry option)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const exporter = new InMemorySpanExporter();
  const contextManager = new AsyncLocalStorageContextManager();

  before(() => {
    context.setGlobalContextManager(contextManager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });
  after(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  /** Runs `body` inside an active span of the caller's own; returns its trace id. */
  const inCallerSpan = async <T>(body: () => Promise<T>): Promise<{ traceId: string; result: T }> => {
    const tracer = trace.getTracer('caller');
    return tracer.startActiveSpan('caller', async (span: Span) => {
      try {
        return { traceId: span.spanContext().traceId, result: await body() };
      } finally {
        span.end();
      }
    });
  };
  const spansNamed = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === name);

  it("add: created and deduplicated each make BullMQ's producer span in the caller's trace, with the outcome; the job carries the context to its worker", async function () {
    const queue = withUniqueness(ctx.queue('mail', { telemetry: new BullMQOtel({ tracerName: 'ojs-unique-test' }) }));
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const { traceId, result: first } = await inCallerSpan(() => queue.add('welcome', { user: 42 }, { unique }));
    const again = await inCallerSpan(() => queue.add('welcome', { user: 42 }, { unique }));
    expect(again.result.id).to.equal(first.id);

    // BullMQ's own span of a plain add through the same wrapper, for its names and attributes.
    const plain = await queue.add('welcome', { user: 7 });
    const [plainSpan, ...adds] = spansNamed('add mail.welcome').sort((a, b) =>
      a.attributes['bullmq.job.id'] === plain.id ? -1 : b.attributes['bullmq.job.id'] === plain.id ? 1 : 0,
    );
    expect(plainSpan!.attributes).to.deep.equal({
      'bullmq.queue.name': 'mail',
      'bullmq.queue.operation': 'add',
      'bullmq.job.name': 'welcome',
      'bullmq.job.id': plain.id,
    });
    expect(adds.map((span) => [span.kind, span.attributes])).to.deep.equal([
      [plainSpan!.kind, { ...plainSpan!.attributes, 'bullmq.job.id': first.id, 'ojs.unique.outcome': 'created' }],
      [plainSpan!.kind, { ...plainSpan!.attributes, 'bullmq.job.id': first.id, 'ojs.unique.outcome': 'deduplicated' }],
    ]);
    expect(adds.map((span) => span.spanContext().traceId)).to.deep.equal([traceId, again.traceId]);
    // §12: the key, args and meta appear in no attribute.
    const attributes = JSON.stringify(adds.map((span) => span.attributes));
    expect(attributes).to.not.contain(first.unique!.uniquenessKey);
    expect(attributes).to.not.contain('42');

    // The stored job carries the caller's context, as BullMQ's own add stores it.
    const stored = await Job.fromId(ctx.queue('mail'), first.id!);
    expect(stored?.opts.telemetry?.metadata, 'trace context on the job').to.be.a('string').and.not.equal('');

    // The worker's span continues the caller's trace.
    const worker = new Worker('mail', async () => 'done', {
      connection: ctx.connect(),
      prefix: ctx.prefix,
      telemetry: new BullMQOtel({ tracerName: 'ojs-unique-test' }),
    });
    ctx.closeLater(worker);
    const done = new Set<string>();
    await new Promise<void>((resolve) =>
      worker.on('completed', (job) => {
        done.add(job.id!);
        if (done.has(first.id!) && done.has(plain.id!)) resolve();
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const consumers = exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.CONSUMER);
    const consumerOf = (id: string) => consumers.find((span) => span.attributes['bullmq.job.id'] === id)!;
    expect(consumerOf(first.id!).spanContext().traceId, "the unique job's worker span").to.equal(traceId);
    expect(consumerOf(first.id!).parentSpanContext?.spanId, 'its parent is the producer span').to.equal(adds[0]!.spanContext().spanId);
  });

  it("a rejected add's span names the existing job and the outcome, and records the error; addBulk makes BullMQ's addBulk span", async function () {
    const queue = withUniqueness(ctx.queue('mail', { telemetry: new BullMQOtel({ tracerName: 'ojs-unique-test' }) }));
    const unique = { keys: ['type'] } as const;
    const first = await queue.add('sync', {}, { unique });
    const error = await queue.add('sync', {}, { unique }).catch((caught: unknown) => caught);
    expect(isDuplicateJobError(error)).to.equal(true);
    const rejected = spansNamed('add mail.sync')[1]!;
    expect(rejected.attributes).to.deep.include({ 'bullmq.job.id': first.id, 'ojs.unique.outcome': 'rejected' });
    expect(rejected.events.map((event) => event.name)).to.include('exception');

    const { traceId, result } = await inCallerSpan(() =>
      queue.addBulk([
        { name: 'report', data: { n: 1 }, opts: { unique: { keys: ['type', 'args'] } } },
        { name: 'report', data: { n: 2 }, opts: { unique: { keys: ['type', 'args'] } } },
      ]),
    );
    const bulk = spansNamed('addBulk mail');
    expect(bulk).to.have.length(1);
    expect(bulk[0]!.attributes).to.deep.include({ 'bullmq.job.bulk.count': 2 });
    expect(bulk[0]!.spanContext().traceId).to.equal(traceId);
    for (const job of result) {
      const stored = await Job.fromId(ctx.queue('mail'), job.id!);
      expect(stored?.opts.telemetry?.metadata, `trace context on job ${job.id}`).to.be.a('string');
    }
  });

  it('without the telemetry option nothing is traced and nothing is stored', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const job = await queue.add('plainq', {}, { unique: { keys: ['type'] } });
    expect(exporter.getFinishedSpans().filter((span) => span.name.startsWith('add'))).to.deep.equal([]);
    expect((await Job.fromId(ctx.queue('mail'), job.id!))?.opts.telemetry).to.equal(undefined);
  });
});
