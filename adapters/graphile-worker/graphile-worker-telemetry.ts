/**
 * What a unique add on Graphile Worker reports through OpenTelemetry (telemetry/): a producer
 * span `add <queue>.<type>` with the outcome and the `ojs.unique.adds` count, on every entry
 * point (`addJob`/`addJobs` of the utils and of task helpers, `addJobWithClient`, the backend).
 *
 * The span's trace context is stored on the job it inserts as Graphile flags, one per entry of
 * the propagator's carrier: `otel:traceparent=00-…-01` (and `otel:tracestate=…`). Not the
 * payload: that is the task's input and the job's OJS args, kept exactly as given. A task reads
 * them back with {@link runInJobTraceContext}. Graphile only reads flags against a worker's
 * `forbiddenFlags`, which never name these.
 */
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { runInTraceContext } from '../../telemetry/trace-context.js';
import { observeUniqueAdd, type UniqueAddObservation } from '../../telemetry/unique-add-observation.js';
import type { PreparedGraphileEnqueue } from './graphile-worker-request.js';

/** The prefix of the flags that carry a job's trace context. */
export const TRACE_FLAG_PREFIX = 'otel:';

/** One unique add's observation, and its request with the span's trace context in its flags. */
export function observeGraphileAdd(request: PreparedGraphileEnqueue): {
  observation: UniqueAddObservation;
  traced: PreparedGraphileEnqueue;
} {
  const observation = observeUniqueAdd('graphile-worker', request.job.queue ?? DEFAULT_QUEUE, request.job.type);
  const carrier = observation.carrier;
  if (carrier === undefined) return { observation, traced: request };
  const flags = [...(request.placement.flags ?? [])];
  for (const [key, value] of Object.entries(carrier)) flags.push(`${TRACE_FLAG_PREFIX}${key}=${value}`);
  return { observation, traced: { ...request, placement: { ...request.placement, flags } } };
}

/** Runs one unique add (`add`, given the traced request) inside its observation. */
export async function observedEnqueue(
  request: PreparedGraphileEnqueue,
  add: (traced: PreparedGraphileEnqueue) => Promise<EnqueueResult>,
): Promise<EnqueueResult> {
  if (request.prepared === null) return add(request);
  const { observation, traced } = observeGraphileAdd(request);
  let result: EnqueueResult;
  try {
    result = await observation.within(() => add(traced));
  } catch (error) {
    observation.failed(error);
    throw error;
  }
  observation.settled(result.outcome, result.job.id, result);
  return result;
}

/**
 * Runs `fn` in the trace context a unique add stored on `job` (Graphile's `helpers.job`), so
 * that the spans it opens (a consumer span of your own) join the trace of the add. Without a
 * stored context, or without `@opentelemetry/api`, `fn` just runs.
 *
 * ```ts
 * const task: Task = (payload, helpers) =>
 *   runInJobTraceContext(helpers.job, () => tracer.startActiveSpan(`process ${helpers.job.task_identifier}`, async (span) => { … }));
 * ```
 */
export function runInJobTraceContext<T>(job: { flags?: Readonly<Record<string, unknown>> | null }, fn: () => T): T {
  let carrier: Record<string, string> | undefined;
  for (const flag in job.flags ?? {}) {
    if (!flag.startsWith(TRACE_FLAG_PREFIX)) continue;
    const split = flag.indexOf('=');
    if (split < 0) continue;
    (carrier ??= {})[flag.slice(TRACE_FLAG_PREFIX.length, split)] = flag.slice(split + 1);
  }
  return runInTraceContext(carrier, fn);
}
