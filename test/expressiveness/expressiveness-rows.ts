/**
 * The rows of docs/expressiveness.md, each as data: the option as its system writes it, the
 * translator call, the OJS policy it becomes, and a scenario (an enqueue sequence with the
 * outcome each enqueue must have) that shows the behaviour. `describeExpressiveness` runs every
 * row through a conformance subject, so one table runs on every backend. Options that cannot be
 * expressed are rows too: their translator call must throw `UntranslatableOptionError`.
 *
 * Periods are short (seconds) so that a backend on a real clock can wait them out.
 */
import type { JobInput, UniquePolicyInput, UpdateField } from '../../src/index.js';
import { fromBullMQ, fromFaktory, fromGraphileWorker, fromOban, fromObanPro, fromZizq, zizqUniqueKey } from '../../src/translate/index.js';

export type SystemName = 'Oban' | 'Oban Pro' | 'Zizq' | 'Faktory' | 'BullMQ' | 'Graphile Worker' | 'Coalescing';

/** One enqueue of the scenario and the outcome it must have. */
export interface EnqueueStep {
  /** Fields of the job over the row's defaults (`type: "row.job"`, `args: {}`). */
  job?: Partial<JobInput>;
  /** Schedule the job this many ms after now (the subject's clock). */
  scheduledIn?: number;
  /** Another policy for this enqueue only (default: the row's). */
  policy?: UniquePolicyInput | null;
  expect: 'created' | 'deduplicated' | 'rejected' | 'updated';
  /** Name the job this step created, to refer to it later. */
  as?: string;
  /** The job this step returned (deduplicated, updated) or was refused for (rejected). */
  existing?: string;
  /** For `updated`: the fields the update must have changed (exactly). */
  changed?: UpdateField[];
  /** For `updated` and `deduplicated`: fields the returned job must have. */
  job_has?: Partial<Record<'args' | 'priority' | 'queue', unknown>>;
  /** The returned job's scheduled_at is exactly its created_at plus this many ms (a capped debounce). */
  scheduled_after_created?: number;
  /**
   * `x_successor`: the answer names a pending successor (present exactly when this is set): name
   * its id, to look it up later with a `job` step.
   */
  successor?: string;
}

export type Step =
  | { enqueue: EnqueueStep }
  /** Start one attempt of the named job with a real worker (it is the only due job of its queue). */
  | { start: string }
  /** End the named job's running attempt. */
  | { finish: string; outcome: 'complete' | 'fail' }
  /** start + finish. */
  | { run: string; outcome: 'complete' | 'fail' }
  /** Make a scheduled job due now. */
  | { makeDue: string }
  /** Let this many ms pass. */
  | { elapse: number }
  /**
   * Look the named job (or pending successor) up by id: it must have these fields (`null`: no
   * such job); found, it is named for later steps.
   */
  | { job: string; has: Partial<Record<'state' | 'args', unknown>> | null };

export interface ExpressivenessRow {
  system: SystemName;
  /** The option as that system's users write it. */
  option: string;
  /** The translator call, as it appears in the reference. */
  call: string;
  translate: () => UniquePolicyInput | null;
  /** What the translator returns. */
  becomes: UniquePolicyInput | null;
  /** What the row shows, in a few words (the test title). */
  shows: string;
  scenario: Step[];
}

/** An option no policy can express: the translator call must throw naming `option`. */
export interface InexpressibleRow {
  system: SystemName;
  option: string;
  call: string;
  translate: () => unknown;
  /** The option path the error must name. */
  names: string;
}

const SUCCESSFUL = ['scheduled', 'available', 'pending', 'active', 'retryable', 'completed'] as const;
const ALL = ['scheduled', 'available', 'pending', 'active', 'completed', 'retryable', 'cancelled', 'discarded'] as const;
const INCOMPLETE = ['available', 'active', 'scheduled', 'retryable', 'pending'] as const;
const QUEUED = ['scheduled', 'available', 'pending'] as const;
const UNTIL_SUCCESS = ['scheduled', 'available', 'pending', 'active', 'retryable'] as const;
const BULLMQ_EXISTING = ['scheduled', 'available', 'pending', 'active', 'retryable', 'completed', 'discarded'] as const;
/** x_successor: duplicates of a running job, the latest kept and added once it finished. */
const SUCCESSOR_SCENARIO: Step[] = [
  { enqueue: { job: { args: { v: 1 } }, expect: 'created', as: 'a' } },
  { start: 'a' },
  { enqueue: { job: { args: { v: 2 } }, expect: 'deduplicated', existing: 'a', successor: 'first successor' } },
  { enqueue: { job: { args: { v: 3 } }, expect: 'deduplicated', existing: 'a', successor: 'b' } },
  { finish: 'a', outcome: 'complete' },
  { job: 'b', has: { state: 'available', args: { v: 3 } } },
  { job: 'first successor', has: null },
  { enqueue: { job: { args: { v: 4 } }, expect: 'deduplicated', existing: 'b', job_has: { args: { v: 3 } } } },
];
const ALL_UPDATE_FIELDS = ['args', 'meta', 'priority', 'max_attempts', 'scheduled_at'] as const;
const ALL_BUT_META = ['args', 'priority', 'max_attempts', 'scheduled_at'] as const;

const same = (as?: string) => ({ expect: 'deduplicated' as const, existing: as });

export const ROWS: ExpressivenessRow[] = [
  // --- Oban -------------------------------------------------------------------------------
  {
    system: 'Oban',
    option: 'unique: true',
    call: 'fromOban(true)',
    translate: () => fromOban(true),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT60S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'worker+queue+args for 60 s; a conflict returns the existing job (conflict?)',
    scenario: [
      { enqueue: { job: { args: { id: 1 } }, expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { id: 1 } }, ...same('a') } },
      { enqueue: { job: { args: { id: 2 } }, expect: 'created' } },
      { enqueue: { job: { args: { id: 1 }, queue: 'other' }, expect: 'created' } },
    ],
  },
  {
    system: 'Oban',
    option: 'period: 2',
    call: 'fromOban({ period: 2 })',
    translate: () => fromOban({ period: 2 }),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT2S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'a duplicate within the period, a new job after it',
    scenario: [{ enqueue: { expect: 'created', as: 'a' } }, { enqueue: same('a') }, { elapse: 2_250 }, { enqueue: { expect: 'created' } }],
  },
  {
    system: 'Oban',
    option: 'period: {2, :minutes}',
    call: "fromOban({ period: [2, 'minutes'] })",
    translate: () => fromOban({ period: [2, 'minutes'] }),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT120S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'a period with a unit',
    scenario: [{ enqueue: { expect: 'created', as: 'a' } }, { enqueue: same('a') }],
  },
  {
    system: 'Oban',
    option: 'period: :infinity',
    call: "fromOban({ period: 'infinity' })",
    translate: () => fromOban({ period: 'infinity' }),
    becomes: { keys: ['type', 'queue', 'args'], states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'no expiry: a completed job still conflicts (default states)',
    scenario: [{ enqueue: { expect: 'created', as: 'a' } }, { run: 'a', outcome: 'complete' }, { enqueue: same('a') }],
  },
  {
    system: 'Oban',
    option: 'fields: [:worker, :args]',
    call: "fromOban({ fields: ['worker', 'args'] })",
    translate: () => fromOban({ fields: ['worker', 'args'] }),
    becomes: { keys: ['type', 'args'], period: 'PT60S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'unique across queues',
    scenario: [{ enqueue: { job: { queue: 'one' }, expect: 'created', as: 'a' } }, { enqueue: { job: { queue: 'two' }, ...same('a') } }],
  },
  {
    system: 'Oban',
    option: 'keys: [:url]',
    call: "fromOban({ keys: ['url'] })",
    translate: () => fromOban({ keys: ['url'] }),
    becomes: { keys: ['type', 'queue', 'args'], args_keys: ['url'], period: 'PT60S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'only the named args keys compared',
    scenario: [
      { enqueue: { job: { args: { url: 'a', user: 1 } }, expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { url: 'a', user: 2 } }, ...same('a') } },
      { enqueue: { job: { args: { url: 'b', user: 1 } }, expect: 'created' } },
    ],
  },
  {
    system: 'Oban',
    option: 'fields: [:worker, :meta], keys: [:tenant]',
    call: "fromOban({ fields: ['worker', 'meta'], keys: ['tenant'] })",
    translate: () => fromOban({ fields: ['worker', 'meta'], keys: ['tenant'] }),
    becomes: { keys: ['type', 'meta'], meta_keys: ['tenant'], period: 'PT60S', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'keys apply to meta',
    scenario: [
      { enqueue: { job: { meta: { tenant: 't1', trace: 1 } }, expect: 'created', as: 'a' } },
      { enqueue: { job: { meta: { tenant: 't1', trace: 2 }, args: { other: true } }, ...same('a') } },
      { enqueue: { job: { meta: { tenant: 't2' } }, expect: 'created' } },
    ],
  },
  {
    system: 'Oban',
    option: 'states: [:available, :executing]',
    call: "fromOban({ states: ['available', 'executing'] })",
    translate: () => fromOban({ states: ['available', 'executing'] }),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT60S', states: ['available', 'active'], on_conflict: 'ignore' },
    shows: 'executing is active; a completed job no longer conflicts',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { start: 'a' },
      { enqueue: same('a') },
      { finish: 'a', outcome: 'complete' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Oban',
    option: 'timestamp: :scheduled_at',
    call: "fromOban({ period: 2, timestamp: 'scheduled_at' })",
    translate: () => fromOban({ period: 2, timestamp: 'scheduled_at' }),
    becomes: {
      keys: ['type', 'queue', 'args'],
      period: 'PT2S',
      states: SUCCESSFUL,
      on_conflict: 'ignore',
      x_period_anchor: 'scheduled_at',
    },
    shows: "the period runs from the job's scheduled time",
    scenario: [
      { enqueue: { scheduledIn: 3_000, expect: 'created', as: 'a' } },
      { elapse: 2_500 },
      { enqueue: same('a') },
      { elapse: 3_000 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Oban',
    option: 'replace: [scheduled: [:args, :priority]]',
    call: "fromOban({ keys: ['id'], replace: { scheduled: ['args', 'priority'] } })",
    translate: () => fromOban({ keys: ['id'], replace: { scheduled: ['args', 'priority'] } }),
    becomes: {
      keys: ['type', 'queue', 'args'],
      args_keys: ['id'],
      period: 'PT60S',
      states: SUCCESSFUL,
      on_conflict: 'ignore',
      x_update: { scheduled: ['args', 'priority'] },
    },
    shows: 'a scheduled duplicate is updated in place and keeps its id',
    scenario: [
      { enqueue: { job: { args: { id: 1, v: 1 } }, scheduledIn: 60_000, expect: 'created', as: 'a' } },
      {
        enqueue: {
          job: { args: { id: 1, v: 2 }, priority: 5 },
          scheduledIn: 60_000,
          expect: 'updated',
          existing: 'a',
          changed: ['args', 'priority'],
          job_has: { args: { id: 1, v: 2 }, priority: 5 },
        },
      },
      { makeDue: 'a' },
      { enqueue: { job: { args: { id: 1, v: 3 } }, ...same('a'), job_has: { args: { id: 1, v: 2 } } } },
    ],
  },
  {
    system: 'Oban',
    option: 'replace: [scheduled: [:scheduled_at]]',
    call: "fromOban({ replace: { scheduled: ['scheduled_at'] } })",
    translate: () => fromOban({ replace: { scheduled: ['scheduled_at'] } }),
    becomes: {
      keys: ['type', 'queue', 'args'],
      period: 'PT60S',
      states: SUCCESSFUL,
      on_conflict: 'ignore',
      x_update: { scheduled: ['scheduled_at'] },
    },
    shows: 'bump the scheduled time of the waiting job',
    scenario: [
      { enqueue: { scheduledIn: 60_000, expect: 'created', as: 'a' } },
      { enqueue: { scheduledIn: 120_000, expect: 'updated', existing: 'a', changed: ['scheduled_at'] } },
    ],
  },
  // --- Oban Pro ---------------------------------------------------------------------------
  {
    system: 'Oban Pro',
    option: 'unique=True',
    call: 'fromObanPro(true)',
    translate: () => fromObanPro(true),
    becomes: { keys: ['type', 'queue', 'args'], states: ALL, on_conflict: 'ignore' },
    shows: "group all: unique while retained; conflicted is outcome 'deduplicated'",
    scenario: [{ enqueue: { expect: 'created', as: 'a' } }, { run: 'a', outcome: 'complete' }, { enqueue: same('a') }],
  },
  {
    system: 'Oban Pro',
    option: 'period: 2',
    call: 'fromObanPro({ period: 2 })',
    translate: () => fromObanPro({ period: 2 }),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT2S', x_period_anchor: 'scheduled_at', states: ALL, on_conflict: 'ignore' },
    shows: "the period runs from the job's scheduled time",
    scenario: [
      { enqueue: { scheduledIn: 3_000, expect: 'created', as: 'a' } },
      { elapse: 2_500 },
      { enqueue: same('a') },
      { elapse: 3_000 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Oban Pro',
    option: 'group: "scheduled"',
    call: "fromObanPro({ group: 'scheduled' })",
    translate: () => fromObanPro({ group: 'scheduled' }),
    becomes: { keys: ['type', 'queue', 'args'], states: ['scheduled'], on_conflict: 'ignore' },
    shows: 'only a job still waiting for its time conflicts (debouncing)',
    scenario: [
      { enqueue: { scheduledIn: 60_000, expect: 'created', as: 'a' } },
      { enqueue: { scheduledIn: 60_000, ...same('a') } },
      { makeDue: 'a' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Oban Pro',
    option: 'group: "incomplete"',
    call: "fromObanPro({ group: 'incomplete' })",
    translate: () => fromObanPro({ group: 'incomplete' }),
    becomes: { keys: ['type', 'queue', 'args'], states: INCOMPLETE, on_conflict: 'ignore' },
    shows: 'a completed job no longer conflicts',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: same('a') },
      { run: 'a', outcome: 'complete' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Oban Pro',
    option: 'group: "successful"',
    call: "fromObanPro({ group: 'successful' })",
    translate: () => fromObanPro({ group: 'successful' }),
    becomes: { keys: ['type', 'queue', 'args'], states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'a discarded job does not conflict, a completed one does',
    scenario: [
      { enqueue: { job: { max_attempts: 1 }, expect: 'created', as: 'a' } },
      { run: 'a', outcome: 'fail' },
      { enqueue: { expect: 'created', as: 'b' } },
      { run: 'b', outcome: 'complete' },
      { enqueue: same('b') },
    ],
  },
  // --- Zizq -------------------------------------------------------------------------------
  {
    system: 'Zizq',
    option: 'uniqueKey: uniqueKey("userId") (uniqueWhile "queued")',
    call: "fromZizq({ uniqueKey: zizqUniqueKey('userId') })",
    translate: () => fromZizq({ uniqueKey: zizqUniqueKey('userId') }),
    becomes: { keys: ['type', 'args'], args_keys: ['userId'], states: QUEUED, on_conflict: 'ignore' },
    shows: 'a duplicate while queued; once a worker has it, a new job is accepted',
    scenario: [
      { enqueue: { job: { args: { userId: 42, template: 'a' } }, expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { userId: 42, template: 'b' } }, ...same('a') } },
      { start: 'a' },
      { enqueue: { job: { args: { userId: 42 } }, expect: 'created' } },
      { finish: 'a', outcome: 'complete' },
    ],
  },
  {
    system: 'Zizq',
    option: 'uniqueKey: uniqueKey(), uniqueWhile: "active"',
    call: "fromZizq({ uniqueKey: zizqUniqueKey(), uniqueWhile: 'active' })",
    translate: () => fromZizq({ uniqueKey: zizqUniqueKey(), uniqueWhile: 'active' }),
    becomes: { keys: ['type', 'args'], states: UNTIL_SUCCESS, on_conflict: 'ignore' },
    shows: 'a duplicate until the job succeeds',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { start: 'a' },
      { enqueue: same('a') },
      { finish: 'a', outcome: 'complete' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Zizq',
    option: 'uniqueWhile: "exists"',
    call: "fromZizq({ uniqueKey: zizqUniqueKey(), uniqueWhile: 'exists' })",
    translate: () => fromZizq({ uniqueKey: zizqUniqueKey(), uniqueWhile: 'exists' }),
    becomes: { keys: ['type', 'args'], states: ALL, on_conflict: 'ignore' },
    shows: 'a duplicate for as long as the job is kept',
    scenario: [{ enqueue: { expect: 'created', as: 'a' } }, { run: 'a', outcome: 'complete' }, { enqueue: same('a') }],
  },
  {
    system: 'Zizq',
    option: 'a later broader uniqueWhile',
    call: "fromZizq({ uniqueKey: zizqUniqueKey() }), then uniqueWhile: 'active'",
    translate: () => fromZizq({ uniqueKey: zizqUniqueKey() }),
    becomes: { keys: ['type', 'args'], states: QUEUED, on_conflict: 'ignore' },
    shows: 'the broader later enqueue does not replace the first job',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: { policy: fromZizq({ uniqueKey: zizqUniqueKey(), uniqueWhile: 'active' }), ...same('a') } },
    ],
  },
  {
    system: 'Zizq',
    option: 'uniqueKey: "send_email:welcome:42" (raw key)',
    call: "fromZizq({ uniqueKey: 'send_email:welcome:42', uniqueWhile: 'active' })",
    translate: () => fromZizq({ uniqueKey: 'send_email:welcome:42', uniqueWhile: 'active' }),
    becomes: { x_key: 'send_email:welcome:42', states: UNTIL_SUCCESS, on_conflict: 'ignore' },
    shows: 'one key shared across job types and queues',
    scenario: [
      { enqueue: { job: { type: 'send_email' }, expect: 'created', as: 'a' } },
      { enqueue: { job: { type: 'push_notification', queue: 'push' }, ...same('a') } },
    ],
  },
  // --- Faktory ----------------------------------------------------------------------------
  {
    system: 'Faktory',
    option: 'unique_for: 2',
    call: 'fromFaktory({ unique_for: 2 })',
    translate: () => fromFaktory({ unique_for: 2 }),
    becomes: {
      keys: ['type', 'queue', 'args'],
      period: 'PT2S',
      x_period_anchor: 'scheduled_at',
      states: UNTIL_SUCCESS,
      on_conflict: 'reject',
    },
    shows: 'a duplicate push is an error until the period ends',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: { expect: 'rejected', existing: 'a' } },
      { elapse: 2_250 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Faktory',
    option: 'unique_for with perform_in',
    call: 'fromFaktory({ unique_for: 2 })',
    translate: () => fromFaktory({ unique_for: 2 }),
    becomes: {
      keys: ['type', 'queue', 'args'],
      period: 'PT2S',
      x_period_anchor: 'scheduled_at',
      states: UNTIL_SUCCESS,
      on_conflict: 'reject',
    },
    shows: "a scheduled job's window includes its delay",
    scenario: [
      { enqueue: { scheduledIn: 3_000, expect: 'created', as: 'a' } },
      { elapse: 2_500 },
      { enqueue: { expect: 'rejected', existing: 'a' } },
      { elapse: 3_000 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Faktory',
    option: 'unique_until: "start"',
    call: "fromFaktory({ unique_for: 600, unique_until: 'start' })",
    translate: () => fromFaktory({ unique_for: 600, unique_until: 'start' }),
    becomes: { keys: ['type', 'queue', 'args'], period: 'PT600S', x_period_anchor: 'scheduled_at', states: QUEUED, on_conflict: 'reject' },
    shows: 'the lock goes when the job starts',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: { expect: 'rejected', existing: 'a' } },
      { start: 'a' },
      { enqueue: { expect: 'created' } },
      { finish: 'a', outcome: 'complete' },
    ],
  },
  {
    system: 'Faktory',
    option: 'unique_for: nil',
    call: 'fromFaktory({ unique_for: null })',
    translate: () => fromFaktory({ unique_for: null }),
    becomes: null,
    shows: 'bypass: a plain job',
    scenario: [{ enqueue: { expect: 'created' } }, { enqueue: { expect: 'created' } }],
  },
  // --- BullMQ -----------------------------------------------------------------------------
  {
    system: 'BullMQ',
    option: 'jobId',
    call: "fromBullMQ({ jobId: 'order-1' })",
    translate: () => fromBullMQ({ jobId: 'order-1' }),
    becomes: { keys: ['queue'], x_key: 'order-1', states: BULLMQ_EXISTING, on_conflict: 'ignore' },
    shows: 'the existing job is returned while it exists, completed included',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { other: 1 } }, ...same('a') } },
      { run: 'a', outcome: 'complete' },
      { enqueue: same('a') },
      { enqueue: { job: { queue: 'another' }, expect: 'created' } },
    ],
  },
  {
    system: 'BullMQ',
    option: 'deduplication: { id } (simple mode)',
    call: "fromBullMQ({ deduplication: { id: 'file-1' } })",
    translate: () => fromBullMQ({ deduplication: { id: 'file-1' } }),
    becomes: { keys: ['queue'], x_key: 'file-1', states: UNTIL_SUCCESS, on_conflict: 'ignore' },
    shows: 'ignored until the job completes or fails',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { enqueue: same('a') },
      { run: 'a', outcome: 'complete' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'BullMQ',
    option: 'deduplication: { id, ttl } (throttle mode)',
    call: "fromBullMQ({ deduplication: { id: 'mail-1', ttl: 2000 } })",
    translate: () => fromBullMQ({ deduplication: { id: 'mail-1', ttl: 2000 } }),
    becomes: { keys: ['queue'], x_key: 'mail-1', period: 'PT2S', states: BULLMQ_EXISTING, on_conflict: 'ignore' },
    shows: 'ignored for ttl ms, even after the job completed',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { run: 'a', outcome: 'complete' },
      { enqueue: same('a') },
      { elapse: 2_250 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'BullMQ',
    option: 'deduplication: { id, ttl, extend: true }',
    call: "fromBullMQ({ deduplication: { id: 'mail-1', ttl: 2000, extend: true } })",
    translate: () => fromBullMQ({ deduplication: { id: 'mail-1', ttl: 2000, extend: true } }),
    becomes: {
      keys: ['queue'],
      x_key: 'mail-1',
      period: 'PT2S',
      x_period_anchor: 'last_duplicate',
      states: BULLMQ_EXISTING,
      on_conflict: 'ignore',
    },
    shows: 'each duplicate restarts the TTL',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { elapse: 1_500 },
      { enqueue: same('a') },
      { elapse: 1_500 },
      { enqueue: same('a') },
      { elapse: 2_250 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'BullMQ',
    option: 'deduplication: { id, ttl, extend, replace } with delay (debounce)',
    call: "fromBullMQ({ deduplication: { id: 'paint', ttl: 60000, extend: true, replace: true } })",
    translate: () => fromBullMQ({ deduplication: { id: 'paint', ttl: 60000, extend: true, replace: true } }),
    becomes: {
      keys: ['queue'],
      x_key: 'paint',
      period: 'PT60S',
      x_period_anchor: 'last_duplicate',
      states: BULLMQ_EXISTING,
      on_conflict: 'ignore',
      x_update: { scheduled: ALL_UPDATE_FIELDS },
    },
    shows: 'the delayed job takes the latest data; once it runs, duplicates are ignored',
    scenario: [
      { enqueue: { job: { args: { color: 'white 1' } }, scheduledIn: 30_000, expect: 'created', as: 'a' } },
      {
        enqueue: {
          job: { args: { color: 'white 2' } },
          scheduledIn: 30_000,
          expect: 'updated',
          existing: 'a',
          job_has: { args: { color: 'white 2' } },
        },
      },
      { makeDue: 'a' },
      { enqueue: { job: { args: { color: 'white 3' } }, ...same('a'), job_has: { args: { color: 'white 2' } } } },
    ],
  },
  {
    system: 'BullMQ',
    option: 'deduplication.keepLastIfActive',
    call: "fromBullMQ({ deduplication: { id: 'sync-1', keepLastIfActive: true } })",
    translate: () => fromBullMQ({ deduplication: { id: 'sync-1', keepLastIfActive: true } }),
    becomes: { keys: ['queue'], x_key: 'sync-1', states: UNTIL_SUCCESS, on_conflict: 'ignore', x_successor: 'latest' },
    shows: 'while the job runs, the latest duplicate waits as its successor and is added when it finishes',
    scenario: SUCCESSOR_SCENARIO,
  },
  // --- Coalescing (the policy extensions no translator needs) ------------------------------
  {
    system: 'Coalescing',
    option: 'debounce with a maximum wait (Inngest debounce.timeout, Trigger.dev maxDelay)',
    call: "{ states: ['scheduled'], on_conflict: 'ignore', x_update: { scheduled: ['args', 'scheduled_at'] }, x_max_wait: 'PT60S' }",
    translate: () => ({
      states: ['scheduled'],
      on_conflict: 'ignore',
      x_update: { scheduled: ['args', 'scheduled_at'] },
      x_max_wait: 'PT60S',
    }),
    becomes: { states: ['scheduled'], on_conflict: 'ignore', x_update: { scheduled: ['args', 'scheduled_at'] }, x_max_wait: 'PT60S' },
    shows: 'each duplicate pushes the run time out, never past 60 s after the first add',
    scenario: [
      { enqueue: { job: { args: { v: 1 } }, scheduledIn: 30_000, expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { v: 2 } }, scheduledIn: 45_000, expect: 'updated', existing: 'a', changed: ['args', 'scheduled_at'] } },
      {
        enqueue: {
          job: { args: { v: 3 } },
          scheduledIn: 120_000,
          expect: 'updated',
          existing: 'a',
          changed: ['args', 'scheduled_at'],
          scheduled_after_created: 60_000,
        },
      },
      {
        enqueue: {
          job: { args: { v: 4 } },
          scheduledIn: 120_000,
          expect: 'updated',
          existing: 'a',
          changed: ['args'],
          scheduled_after_created: 60_000,
          job_has: { args: { v: 4 } },
        },
      },
    ],
  },
  {
    system: 'Coalescing',
    option: "a cooldown from the last run's finish (Faktory #464, Asynq #369)",
    call: "{ period: 'PT2S', x_period_anchor: 'finished_at', states: UNIQUE_STATE_GROUPS.successful, on_conflict: 'ignore' }",
    translate: () => ({ period: 'PT2S', x_period_anchor: 'finished_at', states: SUCCESSFUL, on_conflict: 'ignore' }),
    becomes: { period: 'PT2S', x_period_anchor: 'finished_at', states: SUCCESSFUL, on_conflict: 'ignore' },
    shows: 'a duplicate while the job runs, however long, and for 2 s after it finished',
    scenario: [
      { enqueue: { expect: 'created', as: 'a' } },
      { start: 'a' },
      { elapse: 2_250 },
      { enqueue: same('a') },
      { finish: 'a', outcome: 'complete' },
      { enqueue: same('a') },
      { elapse: 2_250 },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Coalescing',
    option: 'run again after the active one (Sidekiq / Oban Pro "until executing, then once more", River #1183, pg-boss #367)',
    call: "{ on_conflict: 'ignore', x_successor: 'latest' }",
    translate: () => ({ on_conflict: 'ignore', x_successor: 'latest' }),
    becomes: { on_conflict: 'ignore', x_successor: 'latest' },
    shows: 'a duplicate of the running job is kept, the latest one, and runs once the running one finished',
    scenario: SUCCESSOR_SCENARIO,
  },
  // --- Graphile Worker --------------------------------------------------------------------
  {
    system: 'Graphile Worker',
    option: 'jobKey (jobKeyMode "replace")',
    call: "fromGraphileWorker({ jobKey: 'abc' })",
    translate: () => fromGraphileWorker({ jobKey: 'abc' }),
    becomes: {
      x_key: 'abc',
      states: ['scheduled', 'available', 'pending', 'retryable'],
      x_update: { scheduled: ALL_BUT_META, available: ALL_BUT_META, pending: ALL_BUT_META, retryable: ALL_BUT_META },
    },
    shows: 'the waiting job is overwritten in place; beside a running one, a new job is added',
    scenario: [
      { enqueue: { job: { args: { count: 1 } }, scheduledIn: 60_000, expect: 'created', as: 'a' } },
      {
        enqueue: {
          job: { type: 'other.task', args: { count: 2 } },
          scheduledIn: 120_000,
          expect: 'updated',
          existing: 'a',
          changed: ['args', 'scheduled_at'],
          job_has: { args: { count: 2 } },
        },
      },
      { makeDue: 'a' },
      { start: 'a' },
      { enqueue: { job: { args: { count: 3 } }, expect: 'created' } },
      { finish: 'a', outcome: 'complete' },
    ],
  },
  {
    system: 'Graphile Worker',
    option: 'jobKeyMode: "preserve_run_at"',
    call: "fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'preserve_run_at' })",
    translate: () => fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'preserve_run_at' }),
    becomes: {
      x_key: 'abc',
      states: ['scheduled', 'available', 'pending', 'retryable'],
      x_update: {
        scheduled: ['args', 'priority', 'max_attempts'],
        available: ['args', 'priority', 'max_attempts'],
        pending: ['args', 'priority', 'max_attempts'],
        retryable: ['args', 'priority', 'max_attempts', 'scheduled_at'],
      },
    },
    shows: 'the payload is updated, the run time kept (throttling)',
    scenario: [
      { enqueue: { job: { args: { count: 1 } }, scheduledIn: 60_000, expect: 'created', as: 'a' } },
      { enqueue: { job: { args: { count: 2 } }, scheduledIn: 120_000, expect: 'updated', existing: 'a', changed: ['args'] } },
    ],
  },
  {
    system: 'Graphile Worker',
    option: 'jobKeyMode: "unsafe_dedupe"',
    call: "fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'unsafe_dedupe' })",
    translate: () => fromGraphileWorker({ jobKey: 'abc', jobKeyMode: 'unsafe_dedupe' }),
    becomes: { x_key: 'abc', states: ['scheduled', 'available', 'pending', 'active', 'retryable', 'discarded'], on_conflict: 'ignore' },
    shows: 'the existing job is returned unchanged, even while it runs',
    scenario: [
      { enqueue: { job: { args: { count: 1 } }, expect: 'created', as: 'a' } },
      { start: 'a' },
      { enqueue: { job: { args: { count: 2 } }, ...same('a'), job_has: { args: { count: 1 } } } },
      { finish: 'a', outcome: 'complete' },
      { enqueue: { expect: 'created' } },
    ],
  },
  {
    system: 'Graphile Worker',
    option: 'no jobKey',
    call: 'fromGraphileWorker({})',
    translate: () => fromGraphileWorker({}),
    becomes: null,
    shows: 'a plain job',
    scenario: [{ enqueue: { expect: 'created' } }, { enqueue: { expect: 'created' } }],
  },
];

export const INEXPRESSIBLE: InexpressibleRow[] = [
  {
    system: 'Oban',
    option: 'fields without :worker',
    call: "fromOban({ fields: ['args'] })",
    translate: () => fromOban({ fields: ['args'] }),
    names: 'fields',
  },
  {
    system: 'Oban',
    option: ':meta in fields without keys',
    call: "fromOban({ fields: ['worker', 'meta'] })",
    translate: () => fromOban({ fields: ['worker', 'meta'] }),
    names: 'fields',
  },
  {
    system: 'Oban',
    option: 'states: [:suspended]',
    call: "fromOban({ states: ['suspended'] })",
    translate: () => fromOban({ states: ['suspended'] }),
    names: 'states[0]',
  },
  {
    system: 'Oban',
    option: 'replace: [scheduled: [:queue]] (also :worker, :tags)',
    call: "fromOban({ replace: { scheduled: ['queue'] } })",
    translate: () => fromOban({ replace: { scheduled: ['queue'] } }),
    names: 'replace.scheduled[0]',
  },
  {
    system: 'Oban',
    option: 'replace: [completed: …] (a checked terminal state)',
    call: "fromOban({ replace: { completed: ['args'] } })",
    translate: () => fromOban({ replace: { completed: ['args'] } }),
    names: 'replace.completed',
  },
  {
    system: 'Oban Pro',
    option: 'fields without "worker"',
    call: "fromObanPro({ fields: ['args'] })",
    translate: () => fromObanPro({ fields: ['args'] }),
    names: 'fields',
  },
];
