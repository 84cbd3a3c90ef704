/**
 * The in-memory backend: the reference implementation of the OJS unique-jobs semantics, the
 * embedded default of the demo, and a test double for users' own unit tests.
 *
 * Strong (§8.1) within one process. Storage operations are asynchronous, like a real datastore's
 * round trips (and can be given latency with `latencyMs`), so concurrent enqueues really do
 * interleave; the observe-decide-apply step of each enqueue is serialised per uniqueness key by a
 * mutex (`KeyLock`). Removing that lock makes the §14.11 conformance test fail. Lifecycle
 * transitions (fetch, ack, nack, cancel) take the same lock for the job's key, so a job cannot
 * change state between the moment an enqueue observes it and the moment it acts on it.
 *
 * Replacing an `active` job (§5.2): off by default, as on BullMQ and Graphile Worker, so the
 * three backends answer alike: `replace` meeting an active duplicate rejects with state
 * `active`. With `replaceActive: true` the active job is cancelled at once and the new job
 * inserted; the running handler is not interrupted (nothing can interrupt it), but its `ack` or
 * `nack` is then refused with `InvalidTransitionError`, so its outcome is never recorded.
 */
import { BackendError, InvalidTransitionError, JobNotFoundError, OjsUniqueError } from '../../src/errors.js';
import { isDeepStrictEqual } from 'node:util';
import { decideUniqueConflict, type ConflictCandidate, type UpdateDecision } from '../../src/conflict-decision.js';
import { type JobInput, type JsonValue, type OjsJob } from '../../src/job.js';
import { TERMINAL_STATES, type OjsJobState } from '../../src/job-state.js';
import { buildJobView } from '../../src/job-view.js';
import { InvalidJobInputError, underPath } from '../../src/errors.js';
import { ownJobInput, prepareUnique, scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import { reportOnlyShadow, wouldBeFor } from '../../src/report-only.js';
import type { EnqueueResult, UniqueJobsBackend, UniqueJobsCapabilities } from '../../src/unique-jobs-backend.js';
import { UNIQUE_EXTENSIONS, type UniquePolicy, type UpdateField } from '../../src/unique-policy.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { uuidv7 } from '../../src/uuid-v7.js';
import { explainUniqueAdd, type UniqueExplanation } from '../../src/unique-explain.js';
import { KeyLock } from './key-lock.js';
import { observeUniqueAdd } from '../../telemetry/unique-add-observation.js';

export interface MemoryBackendOptions {
  /** The backend's clock, in epoch ms. Inject one to move time in tests. (Default: `Date.now`.) */
  clock?: { now(): number };
  /** `max_attempts` for jobs that do not set it. (Default: 3.) */
  defaultMaxAttempts?: number;
  /** Delay before retry attempt `attempt + 1`, in ms. (Default: `1000 * 2 ** (attempt - 1)`.) */
  retryDelayMs?: (attempt: number) => number;
  /** Let `replace` cancel an `active` job (§5.2; see the file comment). (Default: false.) */
  replaceActive?: boolean;
  /** Simulated latency of each storage operation, in ms; 0 still yields to the event loop. (Default: 0.) */
  latencyMs?: number;
  /**
   * Count each duplicate add on the job it met: `duplicate_count` and `last_duplicate_at` on the
   * OJS job view (docs/decisions.md, "Duplicate counts"). (Default: false: neither field.)
   */
  countDuplicates?: boolean;
}

/** A memory job may also be staged as `pending` until {@link MemoryBackend.activate} (ojs-core §6.1). */
export interface MemoryJobInput extends JobInput {
  pending?: boolean;
}

/** Implements every policy extension (`UNIQUE_EXTENSIONS`), so `enqueue` may also answer `updated`. */
export interface MemoryBackend extends UniqueJobsBackend {
  enqueue(job: MemoryJobInput): Promise<EnqueueResult>;
  /**
   * Enqueues a batch all-or-nothing: every job is validated first (an issue's path starts with the
   * job's index, `[2].unique.period`), the batch holds its keys' locks throughout, and its jobs
   * stay invisible to every other caller (fetch, getJob, jobs()) until the last one is in. A
   * `reject` duplicate (or any failure) undoes every write of the batch and throws. Results are
   * in input order.
   */
  enqueueMany(jobs: readonly MemoryJobInput[]): Promise<EnqueueResult[]>;
  /** OJS FETCH: the oldest due job of the first queue that has one (higher priority first), now `active`; null if none. */
  fetch(queues?: readonly string[]): Promise<OjsJob | null>;
  /** OJS ACK: an active job is `completed`. */
  ack(id: string): Promise<OjsJob>;
  /**
   * OJS FAIL: an active job is `retryable` while attempts remain, else `discarded`; with
   * `retry: false` (a non-retryable error) it is `discarded` at once. (Default: `retry: true`.)
   */
  nack(id: string, error?: { message: string }, options?: { retry?: boolean }): Promise<OjsJob>;
  /** A `pending` job becomes `available`. */
  activate(id: string): Promise<OjsJob>;
  /** A `scheduled` or `retryable` job becomes due now (it is `available` from then on). */
  promote(id: string): Promise<OjsJob>;
  /**
   * OJS manual retry of a dead-lettered job (ojs-core §6: `discarded` -> `available`, which a
   * backend MAY support; BullMQ's `job.retry()` of a failed job): due now, `attempt` 0, no error,
   * no `completed_at`. It holds its key again as a live job, for every policy of the key. A job a
   * replace superseded comes back without one (docs/decisions.md: the hosts differ there).
   */
  retry(id: string): Promise<OjsJob>;
  /**
   * Deletes a job that is not `active`, as a host's own removal does (BullMQ `job.remove()`,
   * `removeOnComplete`, `clean`): `getJob` no longer finds it, its id is free again, and it counts
   * for no policy. A running job is refused (`invalid_transition`), as BullMQ refuses a locked one.
   */
  remove(id: string): Promise<void>;
  /** Every job the backend holds, oldest first: for inspection in tests. */
  jobs(): OjsJob[];
  /**
   * What an enqueue of `job` would do now, and why (src/unique-explain.ts), writing nothing: its
   * key and pre-image, every job recorded under the key, and the outcome. The job must have a
   * policy; bad input is refused with `InvalidJobInputError`, as at enqueue.
   */
  explainUnique(job: JobInput): Promise<UniqueExplanation>;
}

/**
 * `x_successor`: the duplicate an add kept to run after the active job it met (`holder`), one per
 * uniqueness key. Not a job yet: it becomes one, under its own id and policy, when the holder
 * finishes (completed, discarded, cancelled) or is removed.
 */
interface Successor {
  holder: string;
  /** The add's job, its id chosen (the caller's or the backend's). */
  input: MemoryJobInput & { id: string };
  policy: UniquePolicy;
}

/** The writes of an `enqueueMany` in progress: undone in reverse if it fails. */
interface Batch {
  undo: (() => void)[];
}

interface KeyJobs {
  open: Set<string>;
  finished: Map<OjsJobState, Set<string>>;
}

/** A job as the memory backend keeps it: the envelope's fields, with times as epoch ms. */
interface StoredJob extends Omit<
  OjsJob,
  'created_at' | 'scheduled_at' | 'completed_at' | 'uniqueness_key' | 'duplicate_count' | 'last_duplicate_at'
> {
  /** The state as last written. `scheduled`/`retryable` read as `available` once due (see #stateOf). */
  state: OjsJobState;
  created_at: number;
  scheduled_at: number;
  completed_at?: number;
  key: string | null;
  error?: { message: string };
  /** Insertion order, for FIFO fetch and `jobs()`. */
  seq: number;
  /** The last enqueue that found this job a duplicate under `x_period_anchor: "last_duplicate"`. */
  last_duplicate_at?: number;
  /** Duplicate counts (OjsJob.duplicate_count): the adds counted on this job, and when the last one was. */
  duplicates?: number;
  counted_duplicate_at?: number;
}

export function createMemoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  return new MemoryUniqueJobsBackend(options);
}

class MemoryUniqueJobsBackend implements MemoryBackend {
  readonly capabilities: UniqueJobsCapabilities;
  readonly #clock: { now(): number };
  readonly #defaultMaxAttempts: number;
  readonly #retryDelayMs: (attempt: number) => number;
  readonly #replaceActive: boolean;
  readonly #latencyMs: number;
  readonly #countDuplicates: boolean;
  readonly #jobs = new Map<string, StoredJob>();
  /**
   * uniqueness key -> the jobs recorded under it: `open` holds every job not yet seen finished,
   * `finished` the finished ones by state, so that an add reads only the finished states its
   * policy counts (as the Graphile ledger's index does). A job a replace superseded leaves both.
   */
  readonly #byKey = new Map<string, KeyJobs>();
  readonly #lock = new KeyLock();
  /** Caller-chosen ids claimed by enqueues still in flight, so two of them cannot both take one. */
  readonly #claimedIds = new Set<string>();
  /** x_successor: each key's pending successor, and the ids they will take (no add may claim one). */
  readonly #successors = new Map<string, Successor>();
  readonly #successorIds = new Set<string>();
  /** Jobs inserted by an `enqueueMany` still in progress: no other caller sees them yet. */
  readonly #staged = new Set<string>();
  #seq = 0;
  #closed = false;

  constructor(options: MemoryBackendOptions) {
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#defaultMaxAttempts = options.defaultMaxAttempts ?? 3;
    this.#retryDelayMs = options.retryDelayMs ?? ((attempt) => 1000 * 2 ** (attempt - 1));
    this.#replaceActive = options.replaceActive ?? false;
    this.#latencyMs = options.latencyMs ?? 0;
    this.#countDuplicates = options.countDuplicates ?? false;
    this.capabilities = {
      unique_jobs: {
        strength: 'strong',
        mechanism: 'in-process per-key mutex around check-and-insert',
        replace_active: this.#replaceActive,
        extensions: UNIQUE_EXTENSIONS,
      },
    };
  }

  async enqueue(input: MemoryJobInput): Promise<EnqueueResult> {
    this.#assertOpen();
    // Every portable input rule, args and meta in full: the same answer as the other backends.
    const prepared = prepareUnique(input, { now: this.#clock.now(), extensions: UNIQUE_EXTENSIONS });
    // Only the job's own fields from here on (nothing inherited), plus the memory-only `pending`.
    const job: MemoryJobInput = { ...ownJobInput(input), pending: Object.hasOwn(input, 'pending') && input.pending === true };
    // The id is claimed synchronously, before the first await: checked and taken in one step, so
    // two concurrent enqueues with one id cannot both pass, and a replace never cancels anything
    // for an id that turns out to be taken.
    if (job.id !== undefined && (this.#jobs.has(job.id) || this.#claimedIds.has(job.id) || this.#successorIds.has(job.id))) {
      throw new InvalidJobInputError([{ path: 'id', message: 'a job with this id already exists' }]);
    }
    if (job.id === undefined) return this.#observed(job, prepared);
    this.#claimedIds.add(job.id);
    try {
      return await this.#observed(job, prepared);
    } finally {
      this.#claimedIds.delete(job.id);
    }
  }

  /** A single enqueue in its producer span, counted (`ojs.unique.adds`), when it has a policy (telemetry/). */
  async #observed(job: MemoryJobInput, prepared: ReturnType<typeof prepareUnique>): Promise<EnqueueResult> {
    if (!prepared) return this.#enqueueChecked(job, prepared);
    const observation = observeUniqueAdd('memory', job.queue ?? DEFAULT_QUEUE, job.type);
    let result: EnqueueResult;
    try {
      result = await observation.within(() => this.#enqueueChecked(job, prepared));
    } catch (error) {
      observation.failed(error);
      throw error;
    }
    observation.settled(result.outcome, result.job.id, result);
    return result;
  }

  async enqueueMany(inputs: readonly MemoryJobInput[]): Promise<EnqueueResult[]> {
    this.#assertOpen();
    const entries = inputs.map((input, index) => {
      try {
        const prepared = prepareUnique(input, { now: this.#clock.now(), extensions: UNIQUE_EXTENSIONS });
        const job: MemoryJobInput = { ...ownJobInput(input), pending: Object.hasOwn(input, 'pending') && input.pending === true };
        return { job, prepared };
      } catch (error) {
        throw underPath(error, `[${index}].`);
      }
    });
    // Ids are checked and claimed synchronously, as in enqueue.
    const ids = new Set<string>();
    entries.forEach(({ job }, index) => {
      if (job.id === undefined) return;
      if (this.#jobs.has(job.id) || this.#claimedIds.has(job.id) || this.#successorIds.has(job.id) || ids.has(job.id)) {
        throw new InvalidJobInputError([{ path: `[${index}].id`, message: 'a job with this id already exists' }]);
      }
      ids.add(job.id);
    });
    for (const id of ids) this.#claimedIds.add(id);
    // Every key of the batch, locked in key order (two batches sharing keys cannot deadlock).
    const keys = [...new Set(entries.flatMap(({ prepared }) => (prepared ? [prepared.key] : [])))].sort();
    const locked = (index: number, body: () => Promise<EnqueueResult[]>): Promise<EnqueueResult[]> =>
      index === keys.length ? body() : this.#lock.run(keys[index]!, () => locked(index + 1, body));
    const batch: Batch = { undo: [] };
    // Each unique entry's span and count, settled once the whole batch is in. When it fails, the
    // entry that refused it is counted (`rejected` for a duplicate); the others were undone.
    const observed = entries.map(({ job, prepared }) =>
      prepared ? observeUniqueAdd('memory', job.queue ?? DEFAULT_QUEUE, job.type) : null,
    );
    let refused: number | undefined;
    try {
      const results = await locked(0, async () => {
        const results: EnqueueResult[] = [];
        try {
          for (const { job, prepared } of entries) {
            refused = results.length;
            results.push(await this.#enqueueChecked(job, prepared, batch));
          }
          refused = undefined;
          return results;
        } catch (error) {
          for (const undo of batch.undo.reverse()) undo();
          throw error;
        } finally {
          for (const result of results) this.#staged.delete(result.job.id);
          for (const id of ids) this.#staged.delete(id);
        }
      });
      observed.forEach((observation, index) => observation?.settled(results[index]!.outcome, results[index]!.job.id, results[index]));
      return results;
    } catch (error) {
      if (refused !== undefined) observed[refused]?.failed(error);
      for (const observation of observed) observation?.abandoned(error);
      throw error;
    } finally {
      for (const id of ids) this.#claimedIds.delete(id);
    }
  }

  /** `batch`: inside an `enqueueMany`, which holds the key's lock already and journals each write. */
  async #enqueueChecked(input: MemoryJobInput, prepared: ReturnType<typeof prepareUnique>, batch?: Batch): Promise<EnqueueResult> {
    if (!prepared) return { outcome: 'created', job: this.#view(await this.#insert(input, null, null, null, batch)) };
    if (prepared.reportOnly) return this.#reportOnly(input, prepared, batch);

    const decide = async (): Promise<EnqueueResult> => {
      // Observe. The awaits inside are where a real backend's round trips would be, and where
      // another enqueue of the same key would slip in if this section were not serialised.
      const candidates = await this.#candidates(prepared.key, prepared.policy);
      const decision = decideUniqueConflict({
        policy: prepared.policy,
        uniquenessKey: prepared.key,
        now: this.#clock.now(),
        candidates,
        canReplaceActive: this.#replaceActive,
      });
      // x_period_anchor "last_duplicate": this attempt moves the window of every duplicate it
      // found, whatever the answer (a reject included), in the same critical section.
      if (decision.action !== 'insert' && decision.action !== 'replace' && decision.touch) {
        const now = this.#clock.now();
        for (const candidate of decision.touch) await this.#write(candidate.id, { last_duplicate_at: now }, batch);
      }
      // Duplicate counts: the job this add met and left holding the key counts it, as a write of
      // the batch's journal (a refused batch undoes it), before a reject throws.
      if (this.#countDuplicates && decision.action !== 'insert' && decision.action !== 'replace') {
        const holder = this.#jobs.get(decision.existing.id)!;
        await this.#write(holder.id, { duplicates: (holder.duplicates ?? 0) + 1, counted_duplicate_at: this.#clock.now() }, batch);
      }
      switch (decision.action) {
        case 'insert': {
          const job = await this.#insert(input, prepared.policy, prepared.key, null, batch);
          return { outcome: 'created', job: this.#view(job) };
        }
        case 'ignore':
          return { outcome: 'deduplicated', job: this.#view(this.#jobs.get(decision.existing.id)!) };
        case 'update':
          return this.#update(decision, input, batch);
        case 'reject':
          throw decision.error;
        case 'successor': {
          const id = input.id ?? uuidv7(this.#clock.now());
          this.#keepSuccessor(prepared.key, { holder: decision.existing.id, input: { ...input, id }, policy: prepared.policy }, batch);
          return { outcome: 'deduplicated', job: this.#view(this.#jobs.get(decision.existing.id)!), successor: { id } };
        }
        case 'replace': {
          // §5.2: the live duplicates are cancelled before the new job is inserted, inside the
          // same critical section, so no reader of this key ever sees both or neither. A finished
          // one keeps its state, result and times: only the key leaves it.
          const newId = input.id ?? uuidv7(this.#clock.now());
          // The new job takes the key and carries the latest add: a pending successor would be a
          // second live job of the key once its holder finished.
          this.#keepSuccessor(prepared.key, null, batch);
          const superseded: StoredJob[] = [];
          for (const candidate of decision.supersede) {
            superseded.push(
              TERMINAL_STATES.includes(candidate.state)
                ? this.#jobs.get(candidate.id)!
                : await this.#write(candidate.id, { state: 'cancelled', completed_at: this.#clock.now(), replaced_by: newId }, batch),
            );
            this.#supersede(prepared.key, candidate.id, batch);
          }
          const job = await this.#insert({ ...input, id: newId }, prepared.policy, prepared.key, decision.scheduledAt, batch);
          const [replaced, ...others] = superseded.map((c) => this.#view(c));
          return others.length > 0
            ? { outcome: 'replaced', job: this.#view(job), replaced: replaced!, also_replaced: others }
            : { outcome: 'replaced', job: this.#view(job), replaced: replaced! };
        }
      }
    };
    return batch ? decide() : this.#lock.run(prepared.key, decide);
  }

  /**
   * A report-only add (src/report-only.ts): decided under the report-only key with `ignore`; a
   * duplicate there is what the policy would have met, and the job goes in as a plain job.
   */
  async #reportOnly(input: MemoryJobInput, prepared: PreparedUnique, batch: Batch | undefined): Promise<EnqueueResult> {
    const tried = await this.#enqueueChecked(input, reportOnlyShadow(prepared), batch);
    if (tried.outcome === 'created') return { ...tried, reportOnly: true };
    const existing = tried.job;
    const job = this.#view(await this.#insert(input, null, null, null, batch));
    const wouldBe = wouldBeFor(prepared.policy, existing.state, this.#replaceActive);
    return { outcome: 'created', job, reportOnly: true, wouldBe, existingJobId: existing.id, existingJobState: existing.state };
  }

  /**
   * `x_update`: copies the decision's fields from the new job onto the existing one, as the new
   * job would have had them (its defaults included), and re-derives `scheduled`/`available` from
   * a new due time. A pending, active or retryable job keeps its state: only its values change
   * (an active attempt keeps running with the values it started with).
   */
  async #update(
    decision: UpdateDecision,
    input: MemoryJobInput,
    batch: Batch | undefined,
  ): Promise<Extract<EnqueueResult, { outcome: 'updated' }>> {
    const job = this.#jobs.get(decision.existing.id)!;
    const now = this.#clock.now();
    const next: Record<UpdateField, unknown> = {
      args: structuredClone(input.args) as JsonValue,
      meta: structuredClone(input.meta ?? {}) as Record<string, JsonValue>,
      priority: input.priority ?? 0,
      max_attempts: input.max_attempts ?? this.#defaultMaxAttempts,
      // x_max_wait: never past the cap the decision computed from the job's first add.
      scheduled_at: Math.min(
        input.scheduled_at === undefined ? now : scheduledAtMs(input.scheduled_at)!,
        decision.scheduledAtLimit ?? Infinity,
      ),
    };
    const patch: Partial<StoredJob> = {};
    const changed: UpdateField[] = [];
    for (const field of decision.fields) {
      if (isDeepStrictEqual(job[field], next[field])) continue;
      changed.push(field);
      (patch as Record<string, unknown>)[field] = next[field];
    }
    if (patch.scheduled_at !== undefined && (job.state === 'scheduled' || job.state === 'available')) {
      patch.state = patch.scheduled_at > now ? 'scheduled' : 'available';
    }
    return { outcome: 'updated', job: this.#view(await this.#write(job.id, patch, batch)), changed };
  }

  async getJob(id: string): Promise<OjsJob | null> {
    this.#assertOpen();
    await this.#io();
    const job = this.#staged.has(id) ? undefined : this.#jobs.get(id);
    return job ? this.#view(job) : null;
  }

  async cancel(id: string): Promise<OjsJob> {
    return this.#transition(id, ['scheduled', 'available', 'pending', 'retryable', 'active'], 'cancelled', () => ({
      state: 'cancelled',
      completed_at: this.#clock.now(),
    }));
  }

  async fetch(queues: readonly string[] = [DEFAULT_QUEUE]): Promise<OjsJob | null> {
    this.#assertOpen();
    for (;;) {
      const next = this.#nextDue(queues);
      if (!next) return null;
      const taken = await this.#withJobLock(next, async () => {
        if (this.#stateOf(next) !== 'available') return null; // taken by a concurrent fetch
        return this.#write(next.id, { state: 'active', attempt: next.attempt + 1 });
      });
      if (taken) return this.#view(taken);
    }
  }

  async ack(id: string): Promise<OjsJob> {
    return this.#transition(id, ['active'], 'completed', () => ({ state: 'completed', completed_at: this.#clock.now() }));
  }

  async nack(id: string, error: { message: string } = { message: 'failed' }, options: { retry?: boolean } = {}): Promise<OjsJob> {
    const retry = options.retry ?? true;
    return this.#transition(id, ['active'], 'retryable', (job) =>
      retry && job.attempt < job.max_attempts
        ? { state: 'retryable', error, scheduled_at: this.#clock.now() + this.#retryDelayMs(job.attempt) }
        : { state: 'discarded', error, completed_at: this.#clock.now() },
    );
  }

  async activate(id: string): Promise<OjsJob> {
    return this.#transition(id, ['pending'], 'available', () => ({ state: 'available', scheduled_at: this.#clock.now() }));
  }

  async promote(id: string): Promise<OjsJob> {
    return this.#transition(id, ['scheduled', 'retryable'], 'available', () => ({ state: 'available', scheduled_at: this.#clock.now() }));
  }

  async retry(id: string): Promise<OjsJob> {
    return this.#transition(id, ['discarded'], 'available', (job) => {
      // Back among the key's live jobs (read under the key's lock), unless a replace took the key from it.
      const jobs = job.key === null ? undefined : this.#byKey.get(job.key);
      if (jobs && (jobs.open.has(id) || jobs.finished.get('discarded')?.delete(id))) jobs.open.add(id);
      return { state: 'available', scheduled_at: this.#clock.now(), attempt: 0, error: undefined, completed_at: undefined };
    });
  }

  async remove(id: string): Promise<void> {
    this.#assertOpen();
    const job = this.#staged.has(id) ? undefined : this.#jobs.get(id);
    if (!job) throw new JobNotFoundError(id);
    await this.#withJobLock(job, async () => {
      if (this.#stateOf(job) === 'active')
        throw new OjsUniqueError('invalid_transition', `job ${id} is active: a running job cannot be removed`);
      await this.#io();
      this.#jobs.delete(id);
      const jobs = job.key === null ? undefined : this.#byKey.get(job.key);
      if (jobs) for (const ids of [jobs.open, ...jobs.finished.values()]) ids.delete(id);
      // A removed holder (it was retryable, say) never finishes: its successor must not wait forever.
      await this.#promoteSuccessor(job);
    });
  }

  jobs(): OjsJob[] {
    return [...this.#jobs.values()]
      .filter((job) => !this.#staged.has(job.id))
      .sort((a, b) => a.seq - b.seq)
      .map((job) => this.#view(job));
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  // --- storage: every operation is async, like a datastore round trip -------------------------

  async explainUnique(input: JobInput): Promise<UniqueExplanation> {
    this.#assertOpen();
    const prepared = prepareUnique(input, { now: this.#clock.now(), extensions: UNIQUE_EXTENSIONS });
    if (!prepared) throw new InvalidJobInputError([{ path: 'unique', message: 'is required to name a uniqueness key' }]);
    return this.#lock.run(prepared.key, async () => {
      await this.#io();
      // Every job recorded under the key, read without moving it between the key's sets (#candidates does).
      const jobs = this.#byKey.get(prepared.key);
      const ids = jobs ? [...jobs.open, ...[...jobs.finished.values()].flatMap((set) => [...set])] : [];
      const candidates = ids
        .filter((id) => !this.#staged.has(id))
        .map((id) => {
          const job = this.#jobs.get(id)!;
          return {
            id,
            queue: job.queue,
            state: this.#stateOf(job),
            created_at: job.created_at,
            scheduled_at: job.scheduled_at,
            seq: job.seq,
            last_duplicate_at: job.last_duplicate_at ?? null,
            finished_at: this.#finishedAt(job),
          };
        });
      return explainUniqueAdd({ prepared, now: this.#clock.now(), candidates, canReplaceActive: this.#replaceActive });
    });
  }

  async #io(): Promise<void> {
    if (this.#latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.#latencyMs));
    else await Promise.resolve();
  }

  /**
   * The jobs of `key` a decision under `policy` can count: the open ones (a job found finished
   * moves to its state's set here) and the finished ones of the states the policy counts. The
   * work is bounded by the key's open jobs and its counted finished ones, never by its jobs
   * superseded by a replace.
   */
  async #candidates(key: string, policy: UniquePolicy): Promise<ConflictCandidate[]> {
    await this.#io();
    const jobs = this.#byKey.get(key);
    if (!jobs) return [];
    for (const id of jobs.open) {
      const state = this.#stateOf(this.#jobs.get(id)!);
      if (!TERMINAL_STATES.includes(state)) continue;
      jobs.open.delete(id);
      let ids = jobs.finished.get(state);
      if (!ids) jobs.finished.set(state, (ids = new Set()));
      ids.add(id);
    }
    const ids = [...jobs.open];
    for (const state of policy.states) ids.push(...(jobs.finished.get(state) ?? []));
    return ids.map((id) => {
      const job = this.#jobs.get(id)!;
      return {
        id,
        state: this.#stateOf(job),
        created_at: job.created_at,
        scheduled_at: job.scheduled_at,
        seq: job.seq,
        last_duplicate_at: job.last_duplicate_at ?? null,
        finished_at: this.#finishedAt(job),
      };
    });
  }

  /** When a finished job finished (its `completed_at`); null for a live one. */
  #finishedAt(job: StoredJob): number | null {
    return TERMINAL_STATES.includes(this.#stateOf(job)) ? (job.completed_at ?? null) : null;
  }

  /** Sets (or, with null, drops) the pending successor of `key`, replacing any earlier one. */
  #keepSuccessor(key: string, successor: Successor | null, batch?: Batch): void {
    const previous = this.#successors.get(key);
    if (previous) this.#successorIds.delete(previous.input.id);
    if (successor) {
      this.#successors.set(key, successor);
      this.#successorIds.add(successor.input.id);
    } else {
      this.#successors.delete(key);
    }
    if (batch) {
      batch.undo.push(() => {
        if (successor) this.#successorIds.delete(successor.input.id);
        if (previous) {
          this.#successors.set(key, previous);
          this.#successorIds.add(previous.input.id);
        } else {
          this.#successors.delete(key);
        }
      });
    }
  }

  /** `job` finished (or was removed): when it holds its key's successor, the successor becomes a job now. */
  async #promoteSuccessor(job: StoredJob): Promise<void> {
    if (job.key === null) return;
    const successor = this.#successors.get(job.key);
    if (!successor || successor.holder !== job.id) return;
    this.#successors.delete(job.key);
    this.#successorIds.delete(successor.input.id);
    await this.#insert(successor.input, successor.policy, job.key, null);
  }

  /** A replace took `key` from job `id`: it is none of the key's jobs any more. */
  #supersede(key: string, id: string, batch?: Batch): void {
    const jobs = this.#byKey.get(key);
    if (!jobs) return;
    const sets = [jobs.open, ...jobs.finished.values()];
    const from = sets.find((ids) => ids.delete(id));
    if (from && batch) batch.undo.push(() => from.add(id));
  }

  async #insert(
    input: MemoryJobInput,
    policy: UniquePolicy | null,
    key: string | null,
    keepScheduledAt: number | null,
    batch?: Batch,
  ): Promise<StoredJob> {
    await this.#io();
    const now = this.#clock.now();
    const requested = input.scheduled_at === undefined ? now : scheduledAtMs(input.scheduled_at)!;
    const scheduledAt = keepScheduledAt ?? requested;
    const job: StoredJob = {
      id: input.id ?? uuidv7(now),
      type: input.type,
      queue: input.queue ?? DEFAULT_QUEUE,
      args: structuredClone(input.args) as JsonValue,
      meta: structuredClone(input.meta ?? {}) as Record<string, JsonValue>,
      state: input.pending ? 'pending' : scheduledAt > now ? 'scheduled' : 'available',
      attempt: 0,
      max_attempts: input.max_attempts ?? this.#defaultMaxAttempts,
      priority: input.priority ?? 0,
      created_at: now,
      scheduled_at: scheduledAt,
      unique: policy,
      key,
      seq: this.#seq++,
    };
    this.#jobs.set(job.id, job);
    if (key) {
      let jobs = this.#byKey.get(key);
      if (!jobs) this.#byKey.set(key, (jobs = { open: new Set(), finished: new Map() }));
      jobs.open.add(job.id);
    }
    if (batch) {
      this.#staged.add(job.id);
      batch.undo.push(() => {
        this.#jobs.delete(job.id);
        if (key) this.#byKey.get(key)?.open.delete(job.id);
      });
    }
    return job;
  }

  async #write(id: string, patch: Partial<StoredJob>, batch?: Batch): Promise<StoredJob> {
    await this.#io();
    const job = this.#jobs.get(id)!;
    if (batch) {
      const before = Object.keys(patch).map((field) => [field, Object.hasOwn(job, field), job[field as keyof StoredJob]] as const);
      batch.undo.push(() => {
        for (const [field, had, value] of before) {
          if (had) (job as unknown as Record<string, unknown>)[field] = value;
          else delete (job as unknown as Record<string, unknown>)[field];
        }
      });
    }
    Object.assign(job, patch);
    return job;
  }

  async #transition(
    id: string,
    from: readonly OjsJobState[],
    to: OjsJobState,
    patch: (job: StoredJob) => Partial<StoredJob>,
  ): Promise<OjsJob> {
    this.#assertOpen();
    const job = this.#staged.has(id) ? undefined : this.#jobs.get(id);
    if (!job) throw new JobNotFoundError(id);
    const updated = await this.#withJobLock(job, async () => {
      const state = this.#stateOf(job);
      if (!from.includes(state)) throw new InvalidTransitionError(id, state, to);
      const written = await this.#write(id, patch(job));
      // x_successor: the key's successor runs once its holder has finished, in the same step.
      if (TERMINAL_STATES.includes(written.state)) await this.#promoteSuccessor(written);
      return written;
    });
    return this.#view(updated);
  }

  #withJobLock<T>(job: StoredJob, body: () => Promise<T>): Promise<T> {
    // Jobs without a key share one lock name: they can never be a candidate of an enqueue.
    return this.#lock.run(job.key ?? '\u0000no-key', body);
  }

  /** The current OJS state: a `scheduled` or `retryable` job whose time has come is `available`. */
  #stateOf(job: StoredJob): OjsJobState {
    if ((job.state === 'scheduled' || job.state === 'retryable') && job.scheduled_at <= this.#clock.now()) return 'available';
    return job.state;
  }

  #nextDue(queues: readonly string[]): StoredJob | undefined {
    for (const queue of queues) {
      let best: StoredJob | undefined;
      for (const job of this.#jobs.values()) {
        if (job.queue !== queue || this.#stateOf(job) !== 'available' || this.#staged.has(job.id)) continue;
        if (!best || job.priority > best.priority || (job.priority === best.priority && job.seq < best.seq)) best = job;
      }
      if (best) return best;
    }
    return undefined;
  }

  #view(job: StoredJob): OjsJob {
    return buildJobView({
      ...job,
      args: structuredClone(job.args),
      meta: structuredClone(job.meta),
      state: this.#stateOf(job),
      uniqueness_key: job.key,
      duplicate_count: job.duplicates ?? null,
      last_duplicate_at: job.counted_duplicate_at ?? null,
    });
  }

  #assertOpen(): void {
    if (this.#closed) throw new BackendError('memory', 'the backend is closed', { written: false });
  }
}
