/**
 * What a backend's test file hands to `describeConformance`: the backend under test plus the means
 * to drive its jobs through a real lifecycle. Each test gets a fresh subject (fresh key prefix,
 * schema or store) from the factory, and closes it.
 *
 * Lifecycle steps go through the host's real machinery (a BullMQ `Worker`, a Graphile Worker
 * runner, the memory backend's fetch/ack/nack), never by writing the host's keys or rows.
 */
import type { OjsJob, UniqueJobsBackend } from '../../src/index.js';

export interface ConformanceSubject {
  backend: UniqueJobsBackend;

  /**
   * Starts one attempt of job `id` with a real worker and resolves once `getJob(id)` reports it
   * `active`. The suite only calls this when `id` is the only due job in its queue, so a worker
   * that takes "the next job" takes this one.
   */
  start(id: string): Promise<RunningAttempt>;

  /**
   * Makes a `scheduled` or `retryable` job due now through the host's public API (BullMQ
   * `job.promote()`, Graphile `rescheduleJobs`, the memory clock), so it becomes `available`.
   */
  makeDue(id: string): Promise<void>;

  /**
   * A clock the suite can move, when the backend's clock is injectable (memory). `null` means
   * the backend runs on a real clock (Redis `TIME`, PostgreSQL `now()`): period tests then use
   * short periods and wait, and tests that need an exact instant or a calendar date are skipped
   * with that reason.
   */
  clock: VirtualClock | null;

  /**
   * What this subject's enqueue path (an entry point such as `withUniqueness(queue).add`) has no
   * way to say, with the reason. A test that needs it is skipped with that reason in its title.
   * (Default: everything can be said.)
   */
  inexpressible?: Partial<Record<InexpressibleFeature, string>>;

  /**
   * Set (with the reason) when this entry point undoes every write of an add it refuses (a batch
   * that is all-or-nothing, the caller's transaction rolled back): a rejected add then leaves no
   * duplicate count. (Default: a refused add's count is kept.)
   */
  refusalUndone?: string;

  /**
   * Releases everything the subject opened. Called after each test, passed or failed; a subject
   * deletes its data (keys, schema) only when `passed` is true, so a failed test's data stays for
   * inspection.
   */
  close(result?: { passed: boolean }): Promise<void>;
}

/**
 * `plainCustomId`: a job without a policy under a caller-chosen id, claimed atomically (refused
 * when taken, as ojs-core §5.1 asks).
 */
export type InexpressibleFeature = 'plainCustomId';

export interface RunningAttempt {
  /** The handler succeeds; resolves with the job once it is `completed`. */
  complete(): Promise<OjsJob>;
  /** The handler throws; resolves with the job once it is `retryable` or `discarded`. */
  fail(message?: string): Promise<OjsJob>;
}

export interface VirtualClock {
  now(): number;
  set(ms: number): void;
  advance(ms: number): void;
}

export type MakeConformanceSubject = (context: { title: string }) => Promise<ConformanceSubject>;
