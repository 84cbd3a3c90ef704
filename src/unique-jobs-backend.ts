/**
 * The one contract every backend implements: memory (the reference), BullMQ, Graphile Worker.
 * The shared conformance suite (test/conformance) runs against this and nothing else.
 *
 * Deliberately left out: connections, transactions, key prefixes, schemas, workers and bulk
 * enqueue. Those differ per host and live on each adapter's own API (`withUniqueness(queue)`,
 * `addJobs`, a transactional form …). A wider seam would force every backend to fake what its
 * host does not have; this one is what OJS itself defines (PUSH, INFO, CANCEL) plus `close`.
 */
import type { JobInput, OjsJob } from './job.js';
import type { UniqueExtension, UpdateField } from './unique-policy.js';
import type { ReportOnlyAnswer } from './report-only.js';

export interface UniqueJobsCapabilities {
  unique_jobs: {
    /** Spec §8: `strong` means concurrent enqueues of one key never both succeed. */
    strength: 'strong' | 'best-effort';
    /** Free-form, spec §8.3: the technique behind the guarantee. */
    mechanism: string;
    /** Whether `replace` may cancel an `active` job (§5.2). When false it rejects with state `active`. */
    replace_active: boolean;
    /**
     * The policy extensions (`x_…` fields, `UNIQUE_EXTENSIONS`) this backend implements. A policy
     * using any other is refused with `InvalidJobInputError` naming the field, before anything
     * is written. (Default: none.)
     */
    extensions?: readonly UniqueExtension[];
  };
}

export type EnqueueResult =
  /**
   * No duplicate: the job was inserted. Or a report-only policy (`x_report_only`,
   * src/report-only.ts): the job was inserted whatever the policy would have done, which
   * `wouldBe` says (absent when it would have inserted it too), with the job it would have met.
   */
  | ({ outcome: 'created'; job: OjsJob } & Partial<ReportOnlyAnswer>)
  /**
   * `on_conflict: "ignore"` (§5.4): nothing was inserted; `job` is the existing job. Under the
   * `x_successor` extension, when `job` is active, `successor` is present: the add was kept as the
   * key's one pending successor, which becomes the job `successor.id` once `job` finishes (a later
   * duplicate while `job` is still active replaces it, and then that id never becomes a job).
   */
  | { outcome: 'deduplicated'; job: OjsJob; successor?: PendingSuccessor }
  /**
   * `replace` / `replace_except_schedule` (§5.2, §5.3): `job` was inserted and took the key from
   * `replaced` (the existing job) and `also_replaced` (further duplicates, oldest first, when
   * there were several), each as it is after the enqueue: a live one now `cancelled` (with
   * `replaced_by`), a finished one (a policy counting terminal states) exactly as it was. None of
   * them counts as a duplicate of the key again.
   */
  | { outcome: 'replaced'; job: OjsJob; replaced: OjsJob; also_replaced?: OjsJob[] }
  /**
   * The `x_update` extension (only from a backend that declares it): nothing was inserted; `job`
   * is the existing job, same id, after the update. `changed` lists the fields whose value the
   * update changed, in `UPDATE_FIELDS` order (empty when the new job carried the values the job
   * already had).
   */
  | { outcome: 'updated'; job: OjsJob; changed: UpdateField[] };

/** A duplicate kept to run after the active job it met (`x_successor`): not a job yet. */
export interface PendingSuccessor {
  /** The id the successor will have as a job: the add's own `id`, or one the backend chose. */
  id: string;
}

export interface UniqueJobsBackend {
  readonly capabilities: UniqueJobsCapabilities;
  /**
   * OJS PUSH with the unique-jobs check. A duplicate is a returned outcome; only
   * `on_conflict: "reject"` rejects, with `DuplicateJobError`. An invalid policy rejects with
   * `InvalidJobInputError` and writes nothing.
   */
  enqueue(job: JobInput): Promise<EnqueueResult>;
  /** OJS INFO: the job's envelope with its current OJS state, or null if unknown. */
  getJob(id: string): Promise<OjsJob | null>;
  /** OJS CANCEL. Rejects with `JobNotFoundError` or `InvalidTransitionError` (terminal job). */
  cancel(id: string): Promise<OjsJob>;
  close(): Promise<void>;
}
