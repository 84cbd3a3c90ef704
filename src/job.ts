/**
 * The OJS job as this library sees it: what a caller hands to `enqueue` ({@link JobInput}) and the
 * envelope view a backend hands back ({@link OjsJob}). Field names are the OJS wire names
 * (snake_case), so an `OjsJob` can be serialised straight into an OJS response body.
 */
import type { OjsJobState } from './job-state.js';
import type { UniquePolicy, UniquePolicyInput } from './unique-policy.js';

/** A value JSON can carry. Uniqueness keys are only ever computed over these. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * What a caller enqueues. Only `type` and `args` are required.
 *
 * `args` is the OJS `args` array for OJS envelopes, or the host's payload object (BullMQ `data`,
 * Graphile Worker `payload`); see `computeUniquenessKey` for how `args_keys` selects from either.
 */
export interface JobInput {
  /** The job type (BullMQ job name, Graphile Worker task identifier). Non-empty, at most 128 characters, no U+0000. */
  type: string;
  /** The job's arguments: any JSON value. */
  args: unknown;
  /** Target queue: at most 128 characters, no U+0000, no `:`. (Default: `"default"`, as ojs-core §5.1 requires.) */
  queue?: string;
  /** OJS metadata, used only by the `meta` uniqueness dimension here. (Default: `{}`.) */
  meta?: Record<string, unknown>;
  /** A caller-chosen job id: at most 128 characters, no U+0000, no `:`, not an integer string. (Default: a fresh UUIDv7 from the backend.) */
  id?: string;
  /** When the job should first run. A time in the future makes the job `scheduled`. (Default: now.) */
  scheduled_at?: string | Date;
  /** Attempts before the job is discarded, 1 to 32767. (Default: backend-specific; the memory backend uses 3.) */
  max_attempts?: number;
  /** OJS priority, higher runs first, -32767 to 32767. (Default: 0.) */
  priority?: number;
  /**
   * The uniqueness policy, validated at enqueue (spec §2.2) also for JavaScript callers. Absent or
   * `null` means "not unique" (a plain job).
   */
  unique?: UniquePolicyInput | null;
}

/** The OJS envelope view of a job, as `getJob` and every `EnqueueResult` report it. */
export interface OjsJob {
  id: string;
  type: string;
  queue: string;
  args: JsonValue;
  meta: Record<string, JsonValue>;
  state: OjsJobState;
  /** 0 until the first attempt starts; then the number of the current or last attempt. */
  attempt: number;
  max_attempts: number;
  priority: number;
  /** ISO 8601 UTC, on the backend's clock. The period of spec §7 is anchored here. */
  created_at: string;
  /** ISO 8601 UTC: when the job is (or was) due to run. */
  scheduled_at: string;
  /** The parsed policy the job was enqueued with, or null for a job enqueued without one. */
  unique: UniquePolicy | null;
  /** The job's uniqueness key (spec §4), or null without a policy. */
  uniqueness_key: string | null;
  /** Set when the job reached `completed`, `discarded` or `cancelled`. */
  completed_at?: string;
  /** For a job cancelled by `replace`: the id of the job that replaced it. */
  replaced_by?: string;
  /**
   * How many duplicate adds met this job and left it holding its key: answered `deduplicated`,
   * `rejected` or `updated` against it (docs/decisions.md, "Duplicate counts"). Absent until the
   * first one; a re-sent add (the same request after a lost reply) counts once.
   */
  duplicate_count?: number;
  /** ISO 8601 UTC, on the backend's clock: when the last counted duplicate met this job. With `duplicate_count`. */
  last_duplicate_at?: string;
}
