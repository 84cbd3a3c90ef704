/**
 * BullMQ's producer spans for the adds the adapter writes itself (flows, the backend), made as
 * BullMQ's own `trace` makes them: the same name, kind and queue attributes, through the public
 * `Telemetry` interface (its tracer and context manager) only. A span may stay open past the
 * code that opened it, because a node's outcome is known only once the script of the whole flow
 * or batch has answered. And the `ojs.unique.adds` count of each decoded reply (`countAddReply`,
 * telemetry/). No attribute ever carries the uniqueness key, args or meta (spec §12).
 */
import { SpanKind, TelemetryAttributes, type JobsOptions, type Queue, type Span, type Telemetry } from 'bullmq';
import { OUTCOME_ATTRIBUTE } from '../../src/unique-add-telemetry.js';
import { countUniqueAdd } from '../../telemetry/unique-add-counter.js';
import type { UniqueAddOutcome } from '../../src/unique-add-telemetry.js';
import type { ReplyProblem } from './bullmq-errors.js';
import { isReportOnlyShadow } from '../../src/report-only.js';

/** The attribute naming what the uniqueness check decided (`created`, `deduplicated` …). */
export { OUTCOME_ATTRIBUTE };

/**
 * Counts a decoded unique-add reply (`ojs.unique.adds`, telemetry/): its outcome, or `rejected`
 * for a duplicate the policy refused. Nothing for an add without a policy, nor for any other
 * refusal (a taken id, bad input, an error): the uniqueness check did not decide it.
 */
export function countAddReply(
  // A UniqueAddRequest and its decoded reply (bullmq-enqueue.ts, which calls this), by their shape.
  request: { queue: { name: string }; name: string; prepared: object | null },
  decoded: { outcome: Exclude<UniqueAddOutcome, 'rejected'> } | ReplyProblem,
): void {
  // A report-only add's shadow is counted once its answer is known (bullmq-report-only.ts).
  if (request.prepared === null || isReportOnlyShadow(request.prepared)) return;
  if (!('code' in decoded)) countUniqueAdd('bullmq', request.queue.name, request.name, decoded.outcome);
  else if (decoded.code === 'duplicate' || decoded.code === 'active')
    countUniqueAdd('bullmq', request.queue.name, request.name, 'rejected');
}

/** A job's outcome (`UniqueJob.unique`) as a span attribute; none for a job without a policy. */
export function outcomeAttribute(job: object): Record<string, string> {
  const unique = (job as { unique?: { outcome: string } }).unique;
  return unique ? { [OUTCOME_ATTRIBUTE]: unique.outcome } : {};
}

export interface OpenSpan {
  span: Span;
  /** The trace context of the span, as BullMQ stores it on a job (`opts.telemetry.metadata`). */
  metadata: string;
  /** Runs `fn` with the span active, so that spans opened inside are its children. */
  within<T>(fn: () => Promise<T>): Promise<T>;
  /** Ends the span once; later calls do nothing. */
  end(): void;
}

/** Opens a span as BullMQ's `trace` does, as a child of the active context. */
export function openSpan(telemetry: Telemetry, kind: SpanKind, queueName: string, operation: string, destination: string): OpenSpan {
  const { tracer, contextManager } = telemetry;
  const span = tracer.startSpan(destination ? `${operation} ${destination}` : operation, { kind });
  span.setAttributes({ [TelemetryAttributes.QueueName]: queueName, [TelemetryAttributes.QueueOperation]: operation });
  const active: unknown = span.setSpanOnContext(contextManager.active());
  let ended = false;
  return {
    span,
    metadata: contextManager.getMetadata(active),
    within: (fn) => contextManager.with(active, fn),
    end: () => {
      if (ended) return;
      ended = true;
      span.end();
    },
  };
}

/** BullMQ's `trace` around `fn` (just `fn` without telemetry): records what `fn` throws, then ends the span. */
export async function traced<T>(
  telemetry: Telemetry | undefined,
  queueName: string,
  operation: string,
  destination: string,
  fn: (open: OpenSpan | undefined) => Promise<T>,
): Promise<T> {
  if (!telemetry) return fn(undefined);
  const open = openSpan(telemetry, SpanKind.PRODUCER, queueName, operation, destination);
  try {
    return await open.within(() => fn(open));
  } catch (error) {
    open.span.recordException(error as Error);
    throw error;
  } finally {
    open.end();
  }
}

/**
 * A job's `telemetry` option with the span's context, as BullMQ's flow nodes and `addBulk` jobs
 * get it: a context the caller gave wins, and `omitContext` stores none.
 */
export function withStoredContext(given: JobsOptions['telemetry'], metadata: string): JobsOptions['telemetry'] {
  const omitContext = given?.omitContext;
  const stored = given?.metadata || (!omitContext && metadata);
  return stored || omitContext ? ({ metadata: stored, omitContext } as JobsOptions['telemetry']) : given;
}

/**
 * The `addBulk <queue>` span of each queue of a batch written by one script, as one `addBulk`
 * per queue would make them, open until the script answers. Queues without the `telemetry`
 * option get none.
 */
export class BulkSpans {
  readonly #spans = new Map<Queue, { open: OpenSpan; indexes: number[] }>();

  constructor(jobs: readonly { queue: Queue; name: string }[]) {
    jobs.forEach(({ queue }, index) => {
      const telemetry = queue.opts.telemetry;
      if (!telemetry) return;
      let entry = this.#spans.get(queue);
      if (!entry) {
        entry = { open: openSpan(telemetry, SpanKind.PRODUCER, queue.name, 'addBulk', queue.name), indexes: [] };
        this.#spans.set(queue, entry);
      }
      entry.indexes.push(index);
    });
    for (const { open, indexes } of this.#spans.values()) {
      const names = indexes.map((index) => jobs[index]!.name);
      open.span.setAttributes({ [TelemetryAttributes.BulkNames]: names, [TelemetryAttributes.BulkCount]: names.length });
    }
  }

  /** The context to store on a job of `queue`; undefined when the queue has no span. */
  metadataOf(queue: Queue): string | undefined {
    return this.#spans.get(queue)?.open.metadata;
  }

  /**
   * Ends every span: with each job's outcome in the order of `bullmq.job.bulk.names`, or with the
   * error that refused the batch (nothing of it is written).
   */
  end(outcomes: readonly string[] | undefined, error?: unknown): void {
    for (const { open, indexes } of this.#spans.values()) {
      if (outcomes) open.span.setAttributes({ [OUTCOME_ATTRIBUTE]: indexes.map((index) => outcomes[index]!) });
      if (error !== undefined) open.span.recordException(error as Error);
      open.end();
    }
  }
}
