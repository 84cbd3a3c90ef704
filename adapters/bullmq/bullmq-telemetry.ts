/**
 * BullMQ's producer spans for the adds the adapter writes itself (flows), made as
 * BullMQ's own `trace` makes them: the same name, kind and queue attributes, through the public
 * `Telemetry` interface (its tracer and context manager) only. A span may stay open past the
 * code that opened it, because a node's outcome is known only once the script of the whole flow
 * has answered. No attribute ever carries the uniqueness key, args or meta (spec §12).
 */
import { SpanKind, TelemetryAttributes, type JobsOptions, type Span, type Telemetry } from 'bullmq';

/** The attribute naming what the uniqueness check decided (`created`, `deduplicated` …). */
export const OUTCOME_ATTRIBUTE = 'ojs.unique.outcome';

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
