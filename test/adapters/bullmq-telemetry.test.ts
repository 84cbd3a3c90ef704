/**
 * BullMQ's telemetry option (bullmq-otel) on a wrapped queue, a wrapped flow producer and the
 * backend: a unique add makes BullMQ's producer spans, with BullMQ's names and attributes plus the
 * outcome (never the key, args or meta), and stores the caller's trace context on each job, so
 * the worker's span joins the caller's trace. Each test measures BullMQ's own plain equivalent
 * and compares. An in-memory span exporter, no collector.
 */
import { expect } from 'chai';
import { context, propagation, SpanKind, trace, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { FlowProducer, Job, Worker, type Queue } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { fileURLToPath } from 'node:url';
import { createBullMQBackend, withUniqueness, type UniqueJob } from '../../adapters/bullmq/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
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
  const otel = () => new BullMQOtel({ tracerName: 'ojs-unique-test' });

  /** The finished spans under `parent` (a span, or a trace id for its roots), depth first. */
  const childrenOf = (parent: ReadableSpan | string): ReadableSpan[] =>
    exporter
      .getFinishedSpans()
      .filter((span) =>
        typeof parent === 'string'
          ? span.spanContext().traceId === parent && span.parentSpanContext === undefined
          : span.parentSpanContext?.spanId === parent.spanContext().spanId,
      );
  /** A span subtree as names, kinds and attribute names: what a plain add and a unique one must share. */
  interface Outline {
    name: string;
    kind: SpanKind;
    attributes: string[];
    children: Outline[];
  }
  const outline = (span: ReadableSpan, extra: (span: ReadableSpan) => string[] = () => []): Outline => ({
    name: span.name,
    kind: span.kind,
    attributes: [...Object.keys(span.attributes), ...extra(span)].sort(),
    children: childrenOf(span)
      .map((child) => outline(child, extra))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
  });
  /** §12: no attribute value contains the key or any of `secrets` (args values). */
  const expectNoSecrets = (spans: ReadableSpan[], secrets: string[]) => {
    const attributes = JSON.stringify(spans.map((span) => span.attributes));
    for (const secret of secrets) expect(attributes, `an attribute contains ${secret}`).to.not.contain(secret);
  };
  /** Runs a worker on each queue until every job of `ids` completed; returns the consumer span of each. */
  const consume = async (queues: string[], ids: string[]): Promise<Map<string, ReadableSpan>> => {
    const done = new Set<string>();
    await new Promise<void>((resolve) => {
      for (const name of queues) {
        const worker = new Worker(name, async () => 'done', { connection: ctx.connect(), prefix: ctx.prefix, telemetry: otel() });
        ctx.closeLater(worker);
        worker.on('completed', (job) => {
          done.add(job.id!);
          if (ids.every((id) => done.has(id))) resolve();
        });
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const consumers = exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.CONSUMER);
    return new Map(ids.map((id) => [id, consumers.find((span) => span.attributes['bullmq.job.id'] === id)!]));
  };
  const storedMetadata = async (queue: Queue, id: string): Promise<unknown> => (await Job.fromId(queue, id))?.opts.telemetry?.metadata;

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
    expect(bulk[0]!.attributes).to.deep.include({ 'bullmq.job.bulk.count': 2, 'ojs.unique.outcome': ['created', 'created'] });
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

  /** The spans an add made directly under the caller's span of `traceId`. */
  const producedIn = (traceId: string): ReadableSpan[] => childrenOf(childrenOf(traceId)[0]!);
  const events = (span: ReadableSpan) => span.events.map((event) => event.name);

  it("flows: a unique root makes BullMQ's addFlow and addNode spans in the caller's trace, the node with the outcome and the job it names (the existing one when deduplicated or rejected); the job carries the context to its worker", async function () {
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix, telemetry: otel() }));
    ctx.closeLater(flows);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    // BullMQ's own spans of the plain equivalent, through the same wrapper.
    const plain = await inCallerSpan(() => flows.add({ name: 'welcome', queueName: 'mail', data: { user: 'plain-arg' }, opts: {} }));
    const first = await inCallerSpan(() =>
      flows.add({ name: 'welcome', queueName: 'mail', data: { user: 'secret-arg' }, opts: { unique } }),
    );
    const again = await inCallerSpan(() =>
      flows.add({ name: 'welcome', queueName: 'mail', data: { user: 'secret-arg' }, opts: { unique } }),
    );
    const rejected = await inCallerSpan(() =>
      flows
        .add({ name: 'welcome', queueName: 'mail', data: { user: 'secret-arg' }, opts: { unique: { keys: ['type', 'args'] } } })
        .catch((caught: unknown) => caught),
    );
    const created = first.result.job as UniqueJob;
    expect((again.result.job as UniqueJob).unique).to.include({ outcome: 'deduplicated', existingJobId: created.id });
    expect(isDuplicateJobError(rejected.result)).to.equal(true);

    const [plainFlow] = producedIn(plain.traceId);
    const [plainNode] = childrenOf(plainFlow!);
    expect(plainFlow!.name).to.equal('addFlow mail');
    expect(plainNode!.attributes).to.deep.equal({
      'bullmq.queue.name': 'mail',
      'bullmq.queue.operation': 'addNode',
      'bullmq.job.name': 'welcome',
      'bullmq.job.id': plain.result.job.id,
    });
    const withOutcome = (span: ReadableSpan) => (span.name.startsWith('addNode') ? ['ojs.unique.outcome'] : []);
    const expected = [
      [first, created.id, 'created'],
      [again, created.id, 'deduplicated'],
      [rejected, created.id, 'rejected'],
    ] as const;
    for (const [add, id, outcome] of expected) {
      const spans = producedIn(add.traceId);
      expect(spans, `${outcome}: one addFlow span under the caller's`).to.have.length(1);
      expect(outline(spans[0]!), outcome).to.deep.equal(outline(plainFlow!, withOutcome));
      expect(spans[0]!.attributes, outcome).to.deep.equal(plainFlow!.attributes);
      expect(childrenOf(spans[0]!)[0]!.attributes, outcome).to.deep.equal({
        ...plainNode!.attributes,
        'bullmq.job.id': id,
        'ojs.unique.outcome': outcome,
      });
    }
    const [rejectedFlow] = producedIn(rejected.traceId);
    expect(events(rejectedFlow!), 'the addFlow span records the DuplicateJobError').to.include('exception');
    expect(events(childrenOf(rejectedFlow!)[0]!), 'so does the node span').to.include('exception');
    expectNoSecrets(exporter.getFinishedSpans(), [created.unique.uniquenessKey, 'secret-arg']);

    // The context is stored on the job as BullMQ stores it on its own node's; both workers' spans
    // continue their caller's trace under the node's span.
    const mail = ctx.queue('mail');
    expect(await storedMetadata(mail, plain.result.job.id!)).to.be.a('string');
    expect(await storedMetadata(mail, created.id!)).to.be.a('string');
    const consumers = await consume(['mail'], [plain.result.job.id!, created.id!]);
    const uniqueNode = childrenOf(producedIn(first.traceId)[0]!)[0]!;
    expect(consumers.get(plain.result.job.id!)!.parentSpanContext?.spanId, "BullMQ's own").to.equal(plainNode!.spanContext().spanId);
    expect(consumers.get(created.id!)!.spanContext().traceId).to.equal(first.traceId);
    expect(consumers.get(created.id!)!.parentSpanContext?.spanId).to.equal(uniqueNode.spanContext().spanId);
  });

  it("flows: a tree with a unique child makes BullMQ's span tree, the child's node with its outcome (deduplicated: the existing job), and stores the context where BullMQ does (needs BullMQ's flow release step: skipped on a BullMQ without it, such as 6.0.0)", async function () {
    if (flowScriptsProblem() !== null) this.skip();
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix, telemetry: otel() }));
    ctx.closeLater(flows);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    // The parent has no options: BullMQ's FlowProducer then stores no context on it.
    const tree = (fetchOpts: object) => ({
      name: 'report',
      queueName: 'reports',
      children: [
        { name: 'fetch', queueName: 'fetch', data: { page: 'secret-arg' }, opts: fetchOpts },
        { name: 'render', queueName: 'render', data: {}, opts: {} },
      ],
    });
    const plain = await inCallerSpan(() => flows.add(tree({})));
    const first = await inCallerSpan(() => flows.add(tree({ unique })));
    const again = await inCallerSpan(() => flows.add(tree({ unique })));
    const fetchOf = (node: typeof first.result) => node.children!.find((child) => child.job.name === 'fetch')!.job as UniqueJob;
    const renderOf = (node: typeof first.result) => node.children!.find((child) => child.job.name === 'render')!.job;
    expect(fetchOf(again.result).unique).to.include({ outcome: 'deduplicated', existingJobId: fetchOf(first.result).id });

    const [plainFlow] = producedIn(plain.traceId);
    const withOutcome = (span: ReadableSpan) => (span.attributes['bullmq.job.name'] === 'fetch' ? ['ojs.unique.outcome'] : []);
    const nodeNamed = (flow: ReadableSpan, name: string): ReadableSpan => {
      const found = [flow, ...childrenOf(flow), ...childrenOf(flow).flatMap(childrenOf)].find(
        (span) => span.attributes['bullmq.job.name'] === name,
      );
      return found!;
    };
    expect(nodeNamed(plainFlow!, 'fetch').parentSpanContext?.spanId, "BullMQ's child node span is under its parent's").to.equal(
      nodeNamed(plainFlow!, 'report').spanContext().spanId,
    );
    for (const [add, fetchId, outcome] of [
      [first, fetchOf(first.result).id, 'created'],
      [again, fetchOf(first.result).id, 'deduplicated'],
    ] as const) {
      const [flowSpan, ...others] = producedIn(add.traceId);
      expect(others, outcome).to.deep.equal([]);
      expect(outline(flowSpan!), outcome).to.deep.equal(outline(plainFlow!, withOutcome));
      expect(flowSpan!.attributes).to.deep.equal(plainFlow!.attributes);
      expect(nodeNamed(flowSpan!, 'report').attributes).to.deep.equal({
        ...nodeNamed(plainFlow!, 'report').attributes,
        'bullmq.job.id': add.result.job.id,
      });
      expect(nodeNamed(flowSpan!, 'render').attributes).to.deep.equal({
        ...nodeNamed(plainFlow!, 'render').attributes,
        'bullmq.job.id': renderOf(add.result).id,
      });
      expect(nodeNamed(flowSpan!, 'fetch').attributes, outcome).to.deep.equal({
        ...nodeNamed(plainFlow!, 'fetch').attributes,
        'bullmq.job.id': fetchId,
        'ojs.unique.outcome': outcome,
      });
    }
    expectNoSecrets(exporter.getFinishedSpans(), [fetchOf(first.result).unique.uniquenessKey, 'secret-arg']);

    // The context on each job of the tree exactly where BullMQ's own flow puts it.
    const stored = async (node: typeof first.result) =>
      Promise.all([
        storedMetadata(ctx.queue('reports'), node.job.id!),
        storedMetadata(ctx.queue('fetch'), fetchOf(node).id!),
        storedMetadata(ctx.queue('render'), renderOf(node).id!),
      ]).then((values) => values.map((value) => typeof value === 'string' && value !== ''));
    expect(await stored(plain.result), "BullMQ's own").to.deep.equal([false, true, true]);
    expect(await stored(first.result)).to.deep.equal([false, true, true]);

    const ids = [fetchOf(first.result).id!, renderOf(first.result).id!];
    const consumers = await consume(['fetch', 'render'], ids);
    for (const [id, name] of [
      [ids[0]!, 'fetch'],
      [ids[1]!, 'render'],
    ] as const) {
      expect(consumers.get(id)!.spanContext().traceId, name).to.equal(first.traceId);
      expect(consumers.get(id)!.parentSpanContext?.spanId, name).to.equal(
        nodeNamed(producedIn(first.traceId)[0]!, name).spanContext().spanId,
      );
    }
  });

  it("flows: addBulk makes BullMQ's addBulkFlows span over the batch, a unique root's addNode span under it with the outcome, and stores the context on each job", async function () {
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix, telemetry: otel() }));
    ctx.closeLater(flows);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const batch = (welcomeOpts: object) => [
      { name: 'welcome', queueName: 'mail', data: { user: 'secret-arg' }, opts: welcomeOpts },
      { name: 'digest', queueName: 'mail', data: {}, opts: {} },
    ];
    const plain = await inCallerSpan(() => flows.addBulk(batch({})));
    const bulk = await inCallerSpan(() => flows.addBulk(batch({ unique })));
    const [plainSpan] = producedIn(plain.traceId);
    const [bulkSpan, ...others] = producedIn(bulk.traceId);
    expect(others).to.deep.equal([]);
    expect(plainSpan!.name).to.equal('addBulkFlows');
    expect([bulkSpan!.name, bulkSpan!.kind, bulkSpan!.attributes]).to.deep.equal([plainSpan!.name, plainSpan!.kind, plainSpan!.attributes]);
    const plainWelcome = childrenOf(plainSpan!).find((span) => span.attributes['bullmq.job.name'] === 'welcome')!;
    const welcome = bulk.result[0]!.job as UniqueJob;
    const uniqueWelcome = childrenOf(bulkSpan!).find((span) => span.attributes['bullmq.job.name'] === 'welcome')!;
    expect([uniqueWelcome.name, uniqueWelcome.kind, uniqueWelcome.attributes]).to.deep.equal([
      plainWelcome.name,
      plainWelcome.kind,
      { ...plainWelcome.attributes, 'bullmq.job.id': welcome.id, 'ojs.unique.outcome': 'created' },
    ]);
    // The plain flows go in BullMQ's own addBulk, whose span is under ours.
    const [inner] = childrenOf(bulkSpan!).filter((span) => span.name === 'addBulkFlows');
    expect(childrenOf(inner!).map((span) => span.attributes['bullmq.job.name'])).to.deep.equal(['digest']);
    expectNoSecrets(exporter.getFinishedSpans(), [welcome.unique.uniquenessKey, 'secret-arg']);
    for (const node of bulk.result) expect(await storedMetadata(ctx.queue('mail'), node.job.id!), node.job.name).to.be.a('string');
    const consumers = await consume(['mail'], [welcome.id!]);
    expect(consumers.get(welcome.id!)!.spanContext().traceId).to.equal(bulk.traceId);
    expect(consumers.get(welcome.id!)!.parentSpanContext?.spanId).to.equal(uniqueWelcome.spanContext().spanId);
  });

  it("the backend's enqueue makes the span a plain add of its queue makes, with the outcome and the job it names (the existing one when deduplicated or rejected); the job carries the context to its worker", async function () {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, telemetry: otel() });
    ctx.closeLater(backend);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    // BullMQ's own span: a plain add of the backend's queue.
    const plain = await inCallerSpan(() => backend.queue('mail').add('welcome', { user: 'plain-arg' }));
    const first = await inCallerSpan(() => backend.enqueue({ type: 'welcome', queue: 'mail', args: ['secret-arg'], unique }));
    const again = await inCallerSpan(() => backend.enqueue({ type: 'welcome', queue: 'mail', args: ['secret-arg'], unique }));
    const rejected = await inCallerSpan(() =>
      backend
        .enqueue({ type: 'welcome', queue: 'mail', args: ['secret-arg'], unique: { keys: ['type', 'args'] } })
        .catch((caught: unknown) => caught),
    );
    const noPolicy = await inCallerSpan(() => backend.enqueue({ type: 'welcome', queue: 'mail', args: ['secret-arg'] }));
    expect([first.result.outcome, again.result.outcome, isDuplicateJobError(rejected.result)]).to.deep.equal([
      'created',
      'deduplicated',
      true,
    ]);

    const [plainSpan] = producedIn(plain.traceId);
    expect(plainSpan!.attributes).to.deep.equal({
      'bullmq.queue.name': 'mail',
      'bullmq.queue.operation': 'add',
      'bullmq.job.name': 'welcome',
      'bullmq.job.id': plain.result.id,
    });
    const id = first.result.job.id;
    for (const [add, outcome] of [
      [first, 'created'],
      [again, 'deduplicated'],
      [rejected, 'rejected'],
    ] as const) {
      const spans = producedIn(add.traceId);
      expect(
        spans.map((span) => [span.name, span.kind, span.attributes]),
        outcome,
      ).to.deep.equal([
        [plainSpan!.name, plainSpan!.kind, { ...plainSpan!.attributes, 'bullmq.job.id': id, 'ojs.unique.outcome': outcome }],
      ]);
    }
    expect(events(producedIn(rejected.traceId)[0]!)).to.include('exception');
    // A job without a policy: BullMQ's own add of the queue, no outcome.
    expect(producedIn(noPolicy.traceId).map((span) => [span.name, span.attributes])).to.deep.equal([
      [plainSpan!.name, { ...plainSpan!.attributes, 'bullmq.job.id': noPolicy.result.job.id }],
    ]);
    expectNoSecrets(exporter.getFinishedSpans(), [first.result.job.uniqueness_key!, 'secret-arg']);

    const mail = ctx.queue('mail');
    for (const jobId of [id, noPolicy.result.job.id]) expect(await storedMetadata(mail, jobId), jobId).to.be.a('string');
    const consumers = await consume(['mail'], [id]);
    expect(consumers.get(id)!.spanContext().traceId).to.equal(first.traceId);
    expect(consumers.get(id)!.parentSpanContext?.spanId).to.equal(producedIn(first.traceId)[0]!.spanContext().spanId);
  });

  it("the backend's enqueueMany makes the addBulk span of each queue a plain addBulk makes, with each job's outcome; a refused batch's spans record the error", async function () {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, telemetry: otel() });
    ctx.closeLater(backend);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const plain = await inCallerSpan(() =>
      backend.queue('mail').addBulk([
        { name: 'welcome', data: {} },
        { name: 'digest', data: {} },
      ]),
    );
    const batch = await inCallerSpan(() =>
      backend.enqueueMany([
        { type: 'welcome', queue: 'mail', args: ['secret-arg'], unique },
        { type: 'text', queue: 'sms', args: ['secret-arg'], unique },
        { type: 'digest', queue: 'mail', args: [] },
        { type: 'welcome', queue: 'mail', args: ['secret-arg'], unique },
      ]),
    );
    expect(batch.result.map((result) => result.outcome)).to.deep.equal(['created', 'created', 'created', 'deduplicated']);
    const [plainSpan] = producedIn(plain.traceId);
    expect(plainSpan!.attributes).to.deep.equal({
      'bullmq.queue.name': 'mail',
      'bullmq.queue.operation': 'addBulk',
      'bullmq.job.bulk.names': ['welcome', 'digest'],
      'bullmq.job.bulk.count': 2,
    });
    const spans = producedIn(batch.traceId).sort((a, b) => a.name.localeCompare(b.name));
    expect(spans.map((span) => [span.name, span.kind, span.attributes])).to.deep.equal([
      [
        plainSpan!.name,
        plainSpan!.kind,
        {
          ...plainSpan!.attributes,
          'bullmq.job.bulk.names': ['welcome', 'digest', 'welcome'],
          'bullmq.job.bulk.count': 3,
          'ojs.unique.outcome': ['created', 'created', 'deduplicated'],
        },
      ],
      [
        'addBulk sms',
        plainSpan!.kind,
        {
          'bullmq.queue.name': 'sms',
          'bullmq.queue.operation': 'addBulk',
          'bullmq.job.bulk.names': ['text'],
          'bullmq.job.bulk.count': 1,
          'ojs.unique.outcome': ['created'],
        },
      ],
    ]);
    expectNoSecrets(exporter.getFinishedSpans(), [batch.result[0]!.job.uniqueness_key!, 'secret-arg']);

    // Refused while the batch's first job holds its key: nothing written, the spans record the error.
    const refused = await inCallerSpan(() =>
      backend
        .enqueueMany([
          { type: 'digest', queue: 'mail', args: [] },
          { type: 'welcome', queue: 'mail', args: ['secret-arg'], unique: { keys: ['type', 'args'] } },
        ])
        .catch((caught: unknown) => caught),
    );
    expect(isDuplicateJobError(refused.result), 'the batch is refused').to.equal(true);
    const [refusedSpan, ...more] = producedIn(refused.traceId);
    expect(more).to.deep.equal([]);
    expect(refusedSpan!.attributes).to.not.have.property('ojs.unique.outcome');
    expect(events(refusedSpan!)).to.include('exception');

    const [welcome, text, digest] = batch.result.map((result) => result.job);
    const ids = [welcome!.id, text!.id, digest!.id];
    const consumers = await consume(['mail', 'sms'], ids);
    for (const [job, span] of [
      [welcome!, spans[0]!],
      [text!, spans[1]!],
      [digest!, spans[0]!],
    ] as const) {
      expect(await storedMetadata(ctx.queue(job.queue), job.id), job.type).to.be.a('string');
      expect(consumers.get(job.id)!.spanContext().traceId, job.type).to.equal(batch.traceId);
      expect(consumers.get(job.id)!.parentSpanContext?.spanId, job.type).to.equal(span.spanContext().spanId);
    }
  });
});
