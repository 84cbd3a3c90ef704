/**
 * The request of one enqueue on Graphile Worker, built once, before any I/O: the job validated
 * and its key computed by the core, the payload as Graphile will store it, where Graphile runs
 * the job, and the request token that settles a lost reply. Every entry point (utils, task
 * helpers, `addJobWithClient`, cron, the backend) builds it here and hands it to the engine
 * (graphile-worker-enqueue.ts).
 */
import { randomUUID } from 'node:crypto';
import { type JobInput, type JsonValue } from '../../src/job.js';
import { prepareUnique, scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import type { UniqueExtension, UniquePolicy } from '../../src/unique-policy.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';

/** Where and how Graphile Worker runs the job: the `TaskSpec` fields that are not OJS fields. */
export interface GraphilePlacement {
  /** Graphile `queue_name`: jobs sharing one run one at a time. Null runs them in parallel. */
  queueName: string | null;
  /** Graphile priority (numerically smaller runs first); null for Graphile's default, 0. */
  priority: number | null;
  flags: string[] | null;
}

/** An enqueue whose input is already validated: the result of {@link prepareGraphileEnqueue}. */
export interface PreparedGraphileEnqueue {
  job: JobInput;
  prepared: PreparedUnique | null;
  /** The payload exactly as the caller gave it, as sent to Graphile (JSON text). */
  payload: string;
  /** The same payload, parsed back: the job's OJS `args`, as getJob will read them. */
  args: JsonValue;
  /** `meta` exactly as the caller gave it (a copy). */
  meta: Record<string, JsonValue>;
  placement: GraphilePlacement;
  /**
   * A client-made request token, stored on the ledger row the enqueue writes (jobs.request_token):
   * after a reply lost with the connection, looking it up tells whether the write committed.
   */
  token: string;
}

/**
 * The policy extensions the Graphile adapter implements, on every entry point (they all prepare
 * through {@link prepareGraphileEnqueue}): its backend declares the same list.
 */
export const GRAPHILE_WORKER_EXTENSIONS: readonly UniqueExtension[] = ['x_period_anchor', 'x_key', 'x_update', 'x_max_wait', 'x_successor'];

/** Validates everything before any I/O, so a bad job is refused with nothing written. */
export function prepareGraphileEnqueue(job: JobInput, placement: GraphilePlacement): PreparedGraphileEnqueue {
  // Every rule a job must meet is the core's (portable input rules: JSON-ness of args and meta,
  // the id, smallint ranges, four-digit years for run_at); the job keeps args and meta exactly as
  // given (a task must receive what was enqueued), the NFC copies exist only for the key.
  const prepared = prepareUnique(job, { extensions: GRAPHILE_WORKER_EXTENSIONS });
  const payload = JSON.stringify(job.args);
  return {
    job,
    prepared,
    payload,
    args: JSON.parse(payload) as JsonValue,
    meta: JSON.parse(JSON.stringify(job.meta ?? {})) as Record<string, JsonValue>,
    placement,
    token: randomUUID(),
  };
}

/** insert-job's $1..$14. */
export function insertParams(request: PreparedGraphileEnqueue, keepScheduledAt: number | null): unknown[] {
  const { job, prepared, placement } = request;
  const runAt =
    keepScheduledAt !== null
      ? new Date(keepScheduledAt)
      : job.scheduled_at === undefined
        ? null
        : new Date(scheduledAtMs(job.scheduled_at)!);
  const policy: UniquePolicy | null = prepared?.policy ?? null;
  return [
    job.type,
    // The caller's payload, not the normalised copy that was hashed (see prepareGraphileEnqueue).
    request.payload,
    placement.queueName,
    runAt?.toISOString() ?? null,
    job.max_attempts ?? null,
    placement.priority,
    placement.flags,
    job.id ?? null,
    prepared?.key ?? null,
    job.queue ?? DEFAULT_QUEUE,
    JSON.stringify(request.meta),
    policy === null ? null : JSON.stringify(policy),
    policy?.period ?? null,
    job.priority ?? 0,
  ];
}
