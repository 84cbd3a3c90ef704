/**
 * What one cron tick does, the same on every backend (the backend only decides which process
 * gets the tick: cron-schedules.ts):
 *
 * 1. A tick whose wall time the time zone skipped or repeated (DST) pushes nothing (`dst_skip`).
 *    Only BullMQ's scheduler can hand out such a tick; the other backends never schedule one.
 * 2. The overlap policy (ojs-cron §6) looks at the job the cron's last tick pushed. While it has
 *    not finished (available, scheduled, pending, active or retryable): `skip` pushes nothing;
 *    `cancel_previous` cancels it (a host that cannot cancel a running job leaves it, ojs-cron
 *    §6.1's "no-op") and pushes; `allow` and `enqueue` push. `enqueue` cannot hold the new job
 *    back until the previous one ends: it is `allow` here (docs/migration.md). A job waiting to
 *    run counts as not finished, as in the reference servers: a tick that came before a worker
 *    took the previous job does not add a second one.
 * 3. The cron's job is pushed as a PUSH of the template would be (ojs-request.ts), with `meta`
 *    `cron_name` and `cron_triggered_at` (§6.3), an id fixed by the cron and the tick (so a tick
 *    pushed twice, a tick job BullMQ ran again after a stall, makes one job), and
 *    `options.visibility_timeout_ms` of {@link CRON_VISIBILITY_TIMEOUT_MS} unless the template
 *    sets one: a fetch that names none reserves the job that long (job-reservation.ts), as the
 *    reference servers reserve a cron's jobs. The template's own unique policy applies as given.
 *
 * Events (the server's in-process list): `cron.triggered` for a pushed job, `cron.skipped` with
 * its reason otherwise (ojs-cron §9).
 */
import { createHash } from 'node:crypto';
import { InvalidJobInputError, InvalidTransitionError, JobNotFoundError, isDuplicateJobError } from '../src/errors.js';
import type { JsonValue } from '../src/job.js';
import type { OjsJobState } from '../src/job-state.js';
import { occursAt } from './cron-expression.js';
import type { CronFire } from './cron-schedules.js';
import type { GatewayJob, GatewayStore } from './gateway-store.js';
import { parsePush } from './ojs-request.js';
import { applyPushOptions } from './push-options.js';

/** How long a fetch that names no visibility timeout reserves a cron's job: 10 minutes, as the reference servers. */
export const CRON_VISIBILITY_TIMEOUT_MS = 600_000;
const FINISHED: ReadonlySet<OjsJobState> = new Set(['completed', 'cancelled', 'discarded']);

export interface CronFiringEvents {
  /** An event without a job of its own (`cron.skipped`, `cron.triggered`). */
  event(type: string, data: Record<string, JsonValue>): void;
  /** A job event (`job.enqueued`, `job.cancelled`). */
  jobEvent(type: string, job: GatewayJob): void;
}

export function cronFirer(store: GatewayStore, events: CronFiringEvents): CronFire {
  return async (record, tickAt) => {
    const scheduled = new Date(tickAt).toISOString();
    const about: Record<string, JsonValue> = {
      cron_name: record.name,
      cron_expression: record.expression,
      timezone: record.timezone,
      scheduled_time: scheduled,
    };
    const skipped = (reason: string, extra: Record<string, JsonValue> = {}) => {
      events.event('cron.skipped', { ...about, reason, ...extra });
      return null;
    };
    if (!record.enabled) return skipped('disabled');
    if (!occursAt(record.expression, record.timezone, tickAt)) return skipped('dst_skip');
    const previous = record.last_job_id === null ? null : await store.getJob(record.last_job_id);
    if (previous !== null && !FINISHED.has(previous.state)) {
      if (record.overlap_policy === 'skip') return skipped('overlap_skip', { active_job_id: previous.id });
      if (record.overlap_policy === 'cancel_previous') await cancelPrevious(store, previous, events);
    }
    const id = cronJobId(record.name, tickAt);
    const { template } = record;
    const parsed = parsePush({
      ...template,
      id,
      meta: { ...template.meta, cron_name: record.name, cron_triggered_at: scheduled },
      options: { visibility_timeout_ms: CRON_VISIBILITY_TIMEOUT_MS, ...template.options },
    });
    await applyPushOptions(store, [parsed]);
    let job: GatewayJob;
    try {
      const result = await store.enqueue(parsed.input);
      // The template's own policy may answer with an existing job: nothing new was pushed.
      if (result.outcome === 'deduplicated' || result.outcome === 'updated') {
        return skipped('duplicate', { existing_job_id: result.job.id });
      }
      job = result.job;
    } catch (error) {
      // This tick's job is in already (the tick was run again).
      if (
        error instanceof InvalidJobInputError &&
        error.issues.some((issue) => /(^|\.)id$/.test(issue.path) && /already exists/.test(issue.message))
      ) {
        return id;
      }
      if (isDuplicateJobError(error)) return skipped('duplicate', { existing_job_id: error.existingJobId });
      throw error;
    }
    events.jobEvent('job.enqueued', job);
    events.event('cron.triggered', {
      ...about,
      job_id: job.id,
      job_type: job.type,
      run_count: record.run_count + 1,
      actual_time: new Date().toISOString(),
    });
    return job.id;
  };
}

async function cancelPrevious(store: GatewayStore, previous: GatewayJob, events: CronFiringEvents): Promise<void> {
  try {
    events.jobEvent('job.cancelled', await store.cancel(previous.id));
  } catch (error) {
    // Finished meanwhile, or running where the host cannot stop it: the new job goes ahead.
    if (!(error instanceof InvalidTransitionError || error instanceof JobNotFoundError)) throw error;
  }
}

/**
 * The id of the job a cron's tick pushes: a UUIDv7 whose time is the tick and whose other bits
 * are a digest of the cron's name and the tick, the same in every process.
 */
export function cronJobId(name: string, tickAt: number): string {
  const digest = createHash('sha256').update(`${name}\u0000${tickAt}`).digest('hex');
  const time = Math.max(0, Math.floor(tickAt)).toString(16).padStart(12, '0').slice(-12);
  const variant = ((parseInt(digest[3]!, 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${digest.slice(0, 3)}-${variant}${digest.slice(4, 7)}-${digest.slice(7, 19)}`;
}
