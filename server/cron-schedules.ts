/**
 * Where a gateway store keeps its crons (ojs-cron) and how it times them: on the backend, so every
 * gateway process over one Redis or one database lists the same crons, and each tick is handed to
 * exactly one of them (docs/design/gateway.md, "Cron"):
 *
 * - BullMQ: a job scheduler per cron (`upsertJobScheduler` with the expression as `pattern` and
 *   `tz`) on the gateway's own queue, whose tick jobs each process's relay worker takes (BullMQ's
 *   lock: one process per tick); the definitions in a hash beside it.
 * - Graphile Worker: the `gateway_crons` table; a process claims a due tick by moving the row's
 *   `next_run_at` on (a compare-and-set), so one process fires it.
 * - Memory: a map and a timer in the process.
 *
 * What a tick pushes, and the overlap policy, are the server's (cron-firing.ts): the same on every
 * backend. Not here: enabling and disabling a registered cron in place (PATCH), `@every`.
 */
import type { JsonValue } from '../src/job.js';

export const OVERLAP_POLICIES = ['skip', 'allow', 'cancel_previous', 'enqueue'] as const;
/** ojs-cron §6: what a tick does while the cron's previous job has not finished. (Default: skip.) */
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** The job a tick pushes: a PUSH body. */
export interface CronJobTemplate {
  type: string;
  args: JsonValue[];
  meta?: Record<string, JsonValue>;
  options?: Record<string, JsonValue>;
}

export interface CronDefinition {
  name: string;
  /** As the client wrote it (`@daily` stays `@daily`). */
  expression: string;
  /** IANA name. (Default: UTC.) */
  timezone: string;
  overlap_policy: OverlapPolicy;
  /** A disabled cron stays registered and does not fire. (Default: true.) */
  enabled: boolean;
  description: string | null;
  template: CronJobTemplate;
}

/** A registered cron, as each backend keeps it: the definition and what the system keeps of its runs. */
export interface CronRecord extends CronDefinition {
  created_at: string;
  /** Null when disabled. */
  next_run_at: string | null;
  last_run_at: string | null;
  run_count: number;
  /** The job the last tick pushed: what the overlap policy looks at. */
  last_job_id: string | null;
}

/** What a tick did: the job it pushed, or null when the overlap policy skipped it. */
export type CronFire = (record: CronRecord, tickAt: number) => Promise<string | null>;

export interface CronSchedules {
  /** Registers `definition`, or replaces the cron of its name (ojs-cron §8.1's upsert): `created` false then. */
  register(definition: CronDefinition): Promise<{ record: CronRecord; created: boolean }>;
  /** Every registered cron, by name. */
  list(): Promise<CronRecord[]>;
  get(name: string): Promise<CronRecord | null>;
  /** Unregisters a cron: it fires no more; jobs it pushed stay. Null when there was none. */
  remove(name: string): Promise<CronRecord | null>;
  /**
   * Starts handing this process's share of due ticks to `fire` (once per store; stopped by the
   * store's close). A tick whose `fire` throws is not tried again: a cron fires at most once per tick.
   */
  start(fire: CronFire): void;
}
