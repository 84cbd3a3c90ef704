/**
 * What a host without telemetry of its own (Graphile Worker, memory) reports of one unique add:
 * a producer span named and shaped as BullMQ's add span (`add <queue>.<type>`, the operation, the
 * job type and id, with generic `messaging.*` keys for BullMQ's `bullmq.*`), with the outcome,
 * and the `ojs.unique.adds` count. The span's context, injected by the application's
 * propagator, is what Graphile Worker stores on the job so that its task can continue the trace.
 *
 * Without a registered tracer provider no span is made: the API's proxy is asked for a tracer
 * of the registered provider, and there is none. No attribute carries the key, args or meta.
 */
import type { Context, Span, Tracer } from '@opentelemetry/api';
import { isDuplicateJobError } from '../src/errors.js';
import {
  DESTINATION_ATTRIBUTE,
  JOB_TYPE_ATTRIBUTE,
  MESSAGE_ID_ATTRIBUTE,
  OPERATION_ATTRIBUTE,
  OUTCOME_ATTRIBUTE,
  REPORT_ONLY_ATTRIBUTE,
  SYSTEM_ATTRIBUTE,
  countedOutcome,
  uniqueAddSpanName,
  type MessagingSystem,
  type UniqueAddOutcome,
} from '../src/unique-add-telemetry.js';
import { otelApi, type OtelApi } from './otel-api.js';
import type { WouldBe } from '../src/report-only.js';
import { countUniqueAdd, INSTRUMENTATION_SCOPE } from './unique-add-counter.js';

/** A report-only add's fields of an answer (`EnqueueResult`, BullMQ's `job.unique`). */
export interface ReportOnlyFields {
  reportOnly?: true;
  wouldBe?: WouldBe;
}

export interface UniqueAddObservation {
  /**
   * The span's trace context as the application's propagator writes it (W3C: `traceparent`,
   * `tracestate`), to store on the job; undefined without a span or a propagator.
   */
  readonly carrier: Readonly<Record<string, string>> | undefined;
  /** Runs the add with the span active (spans the add opens are its children). */
  within<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * The add's outcome, and the job it returned (the one met, for a duplicate): counted, and the
   * span ended. `report`: a report-only add's answer (src/report-only.ts), counted as what the
   * policy would have done, with `ojs.unique.report_only`.
   */
  settled(outcome: Exclude<UniqueAddOutcome, 'rejected'>, jobId: string, report?: ReportOnlyFields | object): void;
  /** The add failed: a `DuplicateJobError` is counted `rejected` (its span names the existing job); the span records the error and ends. */
  failed(error: unknown): void;
  /** Ends the span without an outcome (an add undone with the batch it was part of): nothing is counted. */
  abandoned(error: unknown): void;
}

/** Opens the observation of one unique add of `type` to `queue`, as a child of the active context. */
export function observeUniqueAdd(system: MessagingSystem, queue: string, type: string): UniqueAddObservation {
  const api = otelApi();
  const span = api === null ? undefined : startSpan(api, system, queue, type);
  if (api === null || span === undefined) {
    return {
      carrier: undefined,
      within: (fn) => fn(),
      settled: (outcome, _jobId, given) => {
        const report = given as ReportOnlyFields | undefined;
        countUniqueAdd(system, queue, type, countedOutcome(outcome, report), report?.reportOnly === true);
      },
      failed: (error) => {
        if (isDuplicateJobError(error)) countUniqueAdd(system, queue, type, 'rejected');
      },
      abandoned: () => undefined,
    };
  }
  const active: Context = api.trace.setSpan(api.context.active(), span);
  const carrier: Record<string, string> = {};
  api.propagation.inject(active, carrier);
  let ended = false;
  const end = () => {
    if (ended) return false;
    ended = true;
    span.end();
    return true;
  };
  return {
    carrier: Object.keys(carrier).length > 0 ? carrier : undefined,
    within: (fn) => api.context.with(active, fn),
    settled: (outcome, jobId, given) => {
      if (ended) return;
      const report = given as ReportOnlyFields | undefined;
      const counted = countedOutcome(outcome, report);
      span.setAttributes({ [MESSAGE_ID_ATTRIBUTE]: jobId, [OUTCOME_ATTRIBUTE]: counted });
      if (report?.reportOnly === true) span.setAttribute(REPORT_ONLY_ATTRIBUTE, true);
      end();
      countUniqueAdd(system, queue, type, counted, report?.reportOnly === true);
    },
    failed: (error) => {
      if (ended) return;
      const duplicate = isDuplicateJobError(error);
      if (duplicate) span.setAttributes({ [MESSAGE_ID_ATTRIBUTE]: error.existingJobId, [OUTCOME_ATTRIBUTE]: 'rejected' });
      // (A DuplicateJobError's message names the existing job, never the key.)
      span.recordException(error as Error);
      end();
      if (duplicate) countUniqueAdd(system, queue, type, 'rejected');
    },
    abandoned: (error) => {
      if (ended) return;
      span.recordException(error as Error);
      end();
    },
  };
}

/** The producer span of the registered tracer provider; undefined when none is registered. */
function startSpan(api: OtelApi, system: MessagingSystem, queue: string, type: string): Span | undefined {
  const tracer = registeredTracer(api);
  return tracer?.startSpan(uniqueAddSpanName(queue, type), {
    kind: api.SpanKind.PRODUCER,
    attributes: {
      [SYSTEM_ATTRIBUTE]: system,
      [DESTINATION_ATTRIBUTE]: queue,
      [OPERATION_ATTRIBUTE]: 'add',
      [JOB_TYPE_ATTRIBUTE]: type,
    },
  });
}

/**
 * The tracer of the registered provider, without making a no-op span when there is none: the
 * API's global proxy (duck-typed: it may be another copy of the API's) has no delegate then.
 */
function registeredTracer(api: OtelApi): Tracer | undefined {
  const provider = api.trace.getTracerProvider() as {
    getDelegateTracer?: (name: string) => Tracer | undefined;
    getTracer(name: string): Tracer;
  };
  return typeof provider.getDelegateTracer === 'function'
    ? provider.getDelegateTracer(INSTRUMENTATION_SCOPE)
    : provider.getTracer(INSTRUMENTATION_SCOPE);
}
