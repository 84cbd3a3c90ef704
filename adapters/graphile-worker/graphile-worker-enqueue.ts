/**
 * One unique enqueue on Graphile Worker, on one connection: the heart of the adapter.
 *
 *   1. try-enqueue, one round trip: read the key's candidates; with none at all, lock the key
 *      (its head row), read again and insert through Graphile's `add_job` (no job key) plus the
 *      ledger row, in that one statement.
 *   2. Otherwise decide with the core's `decideUniqueConflict` (the §5–§9 rules and the policy
 *      extensions are written once, in src/). A `reject` or `ignore` duplicate is answered from
 *      that read: nothing is written (unless a `last_duplicate` anchor must record the attempt).
 *   3. Anything that writes beside existing records runs under the key's lock, held to commit
 *      (the adapter's own transaction, or the caller's): lock-and-read (head row, then the live
 *      candidates' Graphile rows, then the candidates and the DB clock), decide again, insert and
 *      for replace cancel, committed together (spec §8.1); or update the existing job in place
 *      (x_update), or record the duplicate attempt (x_period_anchor "last_duplicate").
 * The decision runs in Node between statements. Doing it in plpgsql would save round trips but
 * write the spec's rules a second time, in a second language; the one shortcut taken in SQL is
 * the case with no candidate at all, where there is nothing to decide.
 */
import { randomUUID } from 'node:crypto';
import { decideUniqueConflict, type UniqueConflictDecision } from '../../src/conflict-decision.js';
import { BackendError, InvalidJobInputError } from '../../src/errors.js';
import { type JobInput, type JsonValue, type OjsJob } from '../../src/job.js';
import { TERMINAL_STATES, type OjsJobState } from '../../src/job-state.js';
import { prepareUnique, scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import type { UniqueExtension, UniquePolicy, UpdateField } from '../../src/unique-policy.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { isConnectionLoss, isRetryableConflict, OWN_TRANSACTION_ATTEMPTS, translatePgError } from './graphile-worker-errors.js';
import { assertGraphileReliances, recheckReliancesAfter } from './graphile-worker-host.js';
import type { SqlFileName } from './generated/sql.js';
import { runQuery, type PgClientLike, type PgQueryResultLike } from './graphile-worker-pg.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/** Where and how Graphile Worker runs the job: the `TaskSpec` fields that are not OJS fields. */
export interface GraphilePlacement {
  /** Graphile `queue_name`: jobs sharing one run one at a time. Null runs them in parallel. */
  queueName: string | null;
  /** Graphile priority (numerically smaller runs first); null for Graphile's default, 0. */
  priority: number | null;
  flags: string[] | null;
}

export interface EnqueueSettings {
  sql: GraphileWorkerSql;
  /** §5.2: let `replace` fence a running job instead of rejecting. */
  replaceActive: boolean;
  /** Send the enqueue's statements as named prepared statements (see GraphileWorkerSql.query). */
  preparedStatements: boolean;
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
export const GRAPHILE_WORKER_EXTENSIONS: readonly UniqueExtension[] = ['x_period_anchor', 'x_key', 'x_update'];

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

/** Runs `body` on a fresh connection (not the one that was lost), releasing it afterwards. */
export type Reconnect = <T>(body: (client: PgClientLike) => Promise<T>) => Promise<T>;

export interface EnqueueMode {
  /**
   * The adapter opens and commits its own transaction; without, the caller is inside BEGIN …
   * COMMIT and everything joins their transaction (and rolls back with it).
   */
  ownTransaction: boolean;
  /** Whether a failure leaves nothing written (the caller undoes the enqueue's writes). (Default: ownTransaction.) */
  undoneOnError?: boolean;
  /**
   * With `ownTransaction`: a fresh connection to tell, by the request token, whether a write
   * whose reply was lost with the connection committed. Without it such a loss is `written: 'unknown'`.
   */
  reconnect?: Reconnect;
}

/** Runs the enqueue on `client` (see {@link EnqueueMode}). */
export async function enqueueOnClient(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  mode: EnqueueMode,
): Promise<EnqueueResult> {
  const { prepared } = request;
  const undone = mode.undoneOnError ?? mode.ownTransaction;
  await assertGraphileReliances(client, settings.sql);
  if (!prepared) {
    // A job without a policy is one statement; no transaction of our own is needed. In
    // autocommit its ledger row has no key to look its token up by, so a lost reply is 'unknown'.
    try {
      return { outcome: 'created', job: await insertJob(client, settings, request, null) };
    } catch (error) {
      recheckReliancesAfter(error, client, settings.sql);
      const mayHaveCommitted = mode.ownTransaction && isConnectionLoss(error);
      throw translatePgError(error, { operation: 'enqueue', requestedId: request.job.id, rolledBack: undone && !mayHaveCommitted });
    }
  }
  try {
    // The adapter's own transaction is retried on a serialisation failure or deadlock: it was
    // rolled back, nothing of it committed, so running it again (same request token: no row
    // holds it) is the same enqueue. A COMMIT whose reply was lost is never retried (see
    // commit()); a caller's transaction is theirs to retry (the typed error says so).
    for (let attempt = 1; ; attempt++) {
      try {
        return await decideAndApply(client, settings, request, prepared, mode);
      } catch (error) {
        if (!mode.ownTransaction || attempt >= OWN_TRANSACTION_ATTEMPTS || !isRetryableConflict(error)) throw error;
      }
    }
  } catch (error) {
    recheckReliancesAfter(error, client, settings.sql);
    // On the adapter's own path every write happens in one statement or one transaction that
    // was rolled back (or whose commit was checked), so a failure wrote nothing.
    throw translatePgError(error, { operation: 'enqueue', requestedId: request.job.id, rolledBack: undone });
  }
}

/** How long the lost-reply check waits for the lost session to end (or for the key's lock). */
const RECOVERY_WAIT_MS = 5_000;

/**
 * Whether a client's `processID` is the pid of its server session, checked once per client. A
 * pooler such as PgBouncer answers with ids of its own, and a check that waited for such an id
 * to vanish from pg_stat_activity would conclude "ended" while the statement may still commit.
 */
const sessionPidChecked = new WeakMap<object, boolean>();

async function noteSessionPid(client: PgClientLike): Promise<void> {
  if (sessionPidChecked.has(client)) return;
  const pid = (client as { processID?: unknown }).processID;
  const own = typeof pid === 'number' && (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid === pid;
  sessionPidChecked.set(client, own);
}

/** What was lost: the statement that may have committed, on which connection. */
export interface LostWrite {
  /** The connection error. */
  error: unknown;
  /** The client it happened on (its backend process id says which session to wait for). */
  client: PgClientLike;
  /**
   * True when the lost statement was COMMIT of a transaction that held the key's lock: waiting
   * for the lock is then enough. False for a statement that takes the lock itself (the
   * one-statement insert), which may not have started yet when the check runs: then the check
   * waits for the lost session to end.
   */
  heldKeyLock: boolean;
}

/**
 * After a connection lost once a committing statement was sent: finds the ledger row written
 * with `token`, on a fresh connection. Found: it committed (the row). Not found once the lost
 * session has ended (nothing of it can commit any more): nothing committed, `written: false`.
 * Cannot tell: `written: 'unknown'`.
 */
export async function recoverRequest(
  reconnect: Reconnect | undefined,
  settings: EnqueueSettings,
  key: string,
  token: string,
  lost: LostWrite,
): Promise<InsertedRow> {
  const what = `enqueue: the connection was lost after the write was sent (${messageOf(lost.error)})`;
  if (!reconnect) throw new BackendError('graphile-worker', `${what}; it may have committed`, { cause: lost.error, written: 'unknown' });
  const pid = sessionPidChecked.get(lost.client) === true ? (lost.client as { processID?: unknown }).processID : undefined;
  let row: InsertedRow | null;
  let timer: NodeJS.Timeout | undefined;
  try {
    // Bounded: the lost client is still held by the caller, so a pool with no other connection to
    // give could otherwise keep this waiting for ever.
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no connection to check on came in time')), 2 * RECOVERY_WAIT_MS);
    });
    row = await Promise.race([
      gaveUp,
      reconnect(async (client) => {
        const find = async () =>
          (await client.query<{ result: InsertedRow }>(settings.sql.text('find-request'), [key, token])).rows[0]?.result ?? null;
        const seen = await find();
        if (seen) return seen;
        if (lost.heldKeyLock) {
          // The lost transaction holds the key's lock until it commits or rolls back (behind a
          // transaction pooler too: the server connection stays assigned for the transaction).
          await client.query('begin');
          try {
            await client.query(`set local lock_timeout = ${RECOVERY_WAIT_MS}`);
            await client.query(settings.sql.text('lock-key'), [key]);
            return await find();
          } finally {
            await client.query('rollback').catch(() => undefined);
          }
        }
        // A statement that takes the lock itself may still be running, or not even read yet: once
        // the lost session's backend has exited, nothing of it can commit any more. A backend sees
        // its client's end when it next reads or writes, i.e. at the latest when the statement is
        // done.
        if (typeof pid !== 'number')
          throw new Error('the lost session cannot be identified (no backend process id of its own, e.g. behind a pooler)');
        const deadline = Date.now() + RECOVERY_WAIT_MS;
        while ((await client.query(settings.sql.text('session-alive'), [pid])).rows.length > 0) {
          if (Date.now() > deadline) throw new Error(`the lost session (backend ${pid}) is still running`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return await find();
      }),
    ]);
  } catch (error) {
    throw new BackendError(
      'graphile-worker',
      `${what}, and checking whether it committed failed (${messageOf(error)}); it may have committed`,
      {
        cause: lost.error,
        written: 'unknown',
      },
    );
  } finally {
    clearTimeout(timer);
  }
  if (row) return row;
  throw new BackendError('graphile-worker', `${what}; it did not commit (checked by its request token)`, {
    cause: lost.error,
    written: false,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A candidate as lock_and_read reports it (functions/candidates.sql). */
export interface CandidateRow {
  job_id: string;
  id: string;
  state: OjsJobState;
  created_at: number;
  scheduled_at: number;
  /** x_period_anchor "last_duplicate": the last duplicate attempt (ms), null if none. */
  last_duplicate_at: number | null;
  /** A replace took the key from this record (the key's head keeps it, marked): ConflictCandidate.superseded. */
  superseded: boolean;
  view: Omit<JobRow, 'job_id' | 'id' | 'state'>;
}

interface LockAndRead {
  now: number;
  candidates: CandidateRow[];
}

async function decideAndApply(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  prepared: PreparedUnique,
  mode: EnqueueMode,
): Promise<EnqueueResult> {
  const { ownTransaction } = mode;
  const params = insertParams(request, null);
  // One round trip for the two common cases (see functions/try-enqueue.sql): a key
  // with no record at all is inserted under the key's lock; a duplicate under reject or ignore is
  // answered from a committed snapshot, read-only.
  let attempt: { inserted: InsertedRow } | LockAndRead;
  // The lost-reply check below trusts the client's backend process id only once it is known to
  // be the session's own (a pooler hands out ids of its own).
  if (ownTransaction && mode.reconnect) await noteSessionPid(client);
  try {
    const first = await statement<{ result: { inserted: InsertedRow } | LockAndRead }>(client, settings, 'try-enqueue', [
      prepared.key,
      prepared.policy.states,
      ...params.slice(0, 8),
      ...params.slice(9),
      request.token,
    ]);
    attempt = first.rows[0]!.result;
  } catch (error) {
    // In autocommit the statement commits its own insert: a lost reply may hide a committed job.
    if (ownTransaction && isConnectionLoss(error)) {
      const row = await recoverRequest(mode.reconnect, settings, prepared.key, request.token, { error, client, heldKeyLock: false });
      return { outcome: 'created', job: createdView(request, row) };
    }
    throw error;
  }
  if ('inserted' in attempt) return { outcome: 'created', job: createdView(request, attempt.inserted) };
  const early = decide(settings, prepared, attempt);
  // Read-only only when nothing is to be written: a `last_duplicate` anchor records the attempt
  // (touch), even on ignore and reject, so those take the locked path too.
  if ((early.action === 'ignore' || early.action === 'reject') && !early.touch) {
    await refuseTakenId(client, settings, request, attempt);
    return settle(early, attempt);
  }

  // An insert beside other records, a replace, an update or a touch: write under the key's lock,
  // held to commit, deciding again on what the locked read shows.
  if (ownTransaction) await client.query('begin');
  try {
    const read = (await statement<{ result: LockAndRead }>(client, settings, 'lock-and-read', [prepared.key, prepared.policy.states]))
      .rows[0]!.result;
    const decision = decide(settings, prepared, read);
    let result: EnqueueResult;
    if (decision.action === 'insert') {
      result = { outcome: 'created', job: await insertJob(client, settings, request, null) };
    } else if (decision.action === 'replace') {
      // Insert first, then cancel, in one statement (replace_jobs): the cancelled rows must name
      // their replacement's id, which is Graphile's id unless the caller chose one. Both commit
      // together, so no reader ever sees the new job beside the old ones, or neither (§5.2
      // "cancelled before the new job" holds for every observer). One statement instead of
      // insert-job then cancel-jobs saves a round trip (six to five).
      const superseded = decision.supersede.map((candidate) => read.candidates.find((c) => c.id === candidate.id)!);
      const applied = (
        await statement<{ result: { inserted: InsertedRow; cancelled: { job_id: string; finished_at: string }[] } }>(
          client,
          settings,
          'replace-jobs',
          [...insertParams(request, decision.scheduledAt), superseded.map((c) => c.job_id), settings.replaceActive, request.token],
        )
      ).rows[0]!.result;
      const job = createdView(request, applied.inserted);
      const finishedAt = new Map(applied.cancelled.map((row) => [row.job_id, row.finished_at]));
      // Every live candidate was locked by lock-and-read, so each one was cancelled: its view is
      // the one just read, now cancelled by this job. A finished one is left as it was read.
      const [replaced, ...others] = superseded.map((c) =>
        TERMINAL_STATES.includes(c.state)
          ? candidateView(c)
          : {
              ...candidateView(c),
              state: 'cancelled' as const,
              completed_at: new Date(finishedAt.get(c.job_id)!).toISOString(),
              replaced_by: job.id,
            },
      );
      result =
        others.length > 0
          ? { outcome: 'replaced', job, replaced: replaced!, also_replaced: others }
          : { outcome: 'replaced', job, replaced: replaced! };
    } else {
      // The id check first, as on the read-only path: a taken id writes nothing, not even a touch.
      await refuseTakenId(client, settings, request, read);
      if (decision.touch) {
        const touched = decision.touch.map((candidate) => read.candidates.find((c) => c.id === candidate.id)!.job_id);
        await statement(client, settings, 'touch-jobs', [touched, prepared.policy.period]);
      }
      if (decision.action === 'update') {
        const existing = read.candidates.find((candidate) => candidate.id === decision.existing.id)!;
        result = await updateJob(client, settings, request, existing, decision.fields);
      } else if (decision.action === 'reject') {
        // A reject that touched still writes (the attempt moved the window): commit, then throw.
        if (ownTransaction) await commit(client, mode, settings, prepared.key, request.token, 'untracked');
        throw decision.error;
      } else {
        result = settle(decision, read);
      }
    }
    if (ownTransaction) {
      const wrote =
        decision.action === 'insert' || decision.action === 'replace'
          ? 'token'
          : decision.action === 'update' || decision.touch
            ? 'untracked'
            : false;
      await commit(client, mode, settings, prepared.key, request.token, wrote);
    }
    return result;
  } catch (error) {
    // A DuplicateJobError thrown after its transaction committed (a touching reject): the
    // rollback is then a no-op outside any transaction, harmless.
    if (ownTransaction && !(error instanceof CommitChecked)) await client.query('rollback').catch(() => undefined);
    throw error instanceof CommitChecked ? error.error : error;
  }
}

/**
 * `x_update`: copies `fields` of the new job onto `existing` (update-job.sql), then reads the job
 * back on the same connection, inside the transaction: the job as the update left it.
 */
async function updateJob(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  existing: CandidateRow,
  fields: UpdateField[],
): Promise<EnqueueResult> {
  const { job, placement } = request;
  const { changed } = (
    await statement<{ result: { changed: UpdateField[] } }>(client, settings, 'update-job', [
      existing.job_id,
      fields,
      request.payload,
      JSON.stringify(request.meta),
      job.priority ?? 0,
      placement.priority,
      job.max_attempts ?? null,
      job.scheduled_at === undefined ? null : new Date(scheduledAtMs(job.scheduled_at)!).toISOString(),
    ])
  ).rows[0]!.result;
  return { outcome: 'updated', job: (await readJob(client, settings.sql, existing.id))!, changed };
}

/** An error from {@link commit}, already settled by the token check (no rollback to send). */
class CommitChecked {
  constructor(readonly error: unknown) {}
}

/**
 * COMMIT of the adapter's own transaction. A lost reply to it is settled by the request token:
 * committed → returns (the caller returns the outcome it computed); not committed → written
 * false; cannot tell → written 'unknown'. A transaction that wrote nothing has nothing to check;
 * one that wrote without a token (`untracked`: an update, a touch) is written 'unknown'.
 */
async function commit(
  client: PgClientLike,
  mode: EnqueueMode,
  settings: EnqueueSettings,
  key: string,
  token: string,
  wrote: 'token' | 'untracked' | false,
): Promise<void> {
  try {
    await client.query('commit');
  } catch (error) {
    if (!isConnectionLoss(error)) throw error;
    if (!wrote) return;
    if (wrote === 'untracked') {
      // An update or touch writes no ledger row of its own, so no request token can tell.
      throw new CommitChecked(
        new BackendError('graphile-worker', `enqueue: the connection was lost during COMMIT (${messageOf(error)}); it may have committed`, {
          cause: error,
          written: 'unknown',
        }),
      );
    }
    try {
      await recoverRequest(mode.reconnect, settings, key, token, { error, client, heldKeyLock: true });
    } catch (settled) {
      throw new CommitChecked(settled);
    }
  }
}

/** One of the enqueue's statements, prepared or not as `settings` say (GraphileWorkerSql.query). */
function statement<R>(
  client: PgClientLike,
  settings: EnqueueSettings,
  name: SqlFileName,
  values: unknown[],
): Promise<PgQueryResultLike<R>> {
  return runQuery<R>(client, settings.sql.query(name, values, settings.preparedStatements));
}

function decide(settings: EnqueueSettings, prepared: PreparedUnique, read: LockAndRead): UniqueConflictDecision {
  return decideUniqueConflict({
    policy: prepared.policy,
    uniquenessKey: prepared.key,
    now: read.now,
    // seq = Graphile's job id: a bigserial, and one key's inserts are serialised by its head-row
    // lock, so it increases in insertion order. It breaks ties on created_at (milliseconds here,
    // so ties are common under load), as insertionOrder asks; without it the tie fell to the OJS
    // ids compared as text ("10" < "9", or any caller-chosen id). Nothing in SQL orders the
    // candidates: the core's decideConflict alone picks "the existing one" and the cancel order.
    candidates: read.candidates.map((candidate) => ({ ...candidate, seq: Number(candidate.job_id) })),
    canReplaceActive: settings.replaceActive,
  });
}

/**
 * The id check comes first (§5.1, as on every backend): a caller-chosen id that already names a
 * job is refused as bad input even when the policy would answer a duplicate, e.g. when that job is
 * the duplicate. An insert or replace needs no check: its insert fails on the id (23505). Read
 * after the decision, and only for a duplicate with a chosen id: ids are never freed (but by
 * reclaim), so "not taken" now means not taken when the candidates were read.
 */
async function refuseTakenId(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  read: LockAndRead,
): Promise<void> {
  const id = request.job.id;
  if (id === undefined) return;
  const taken =
    read.candidates.some((candidate) => candidate.id === id) ||
    (await statement<{ taken: boolean }>(client, settings, 'id-taken', [id])).rows[0]!.taken;
  if (taken) throw new InvalidJobInputError([{ path: 'id', message: `a job with id ${id} already exists` }]);
}

/** A key's candidates read without its lock (read-candidates.sql), and how to view one as a job. */
export interface KeyCandidates {
  now: number;
  candidates: CandidateRow[];
  view(candidate: CandidateRow): OjsJob;
}

export async function readCandidates(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  key: string,
  states: readonly OjsJobState[],
): Promise<KeyCandidates> {
  const { rows } = await client.query<{ result: LockAndRead }>(sql.text('read-candidates'), [key, states]);
  return { ...rows[0]!.result, view: candidateView };
}

/** The outcome of an `ignore` or `reject` decision, from the read it was made on. */
function settle(decision: Extract<UniqueConflictDecision, { action: 'ignore' | 'reject' }>, read: LockAndRead): EnqueueResult {
  if (decision.action === 'reject') throw decision.error;
  return { outcome: 'deduplicated', job: candidateView(read.candidates.find((candidate) => candidate.id === decision.existing.id)!) };
}

function candidateView(candidate: CandidateRow): OjsJob {
  return toOjsJob({ ...candidate.view, job_id: candidate.job_id, id: candidate.id, state: candidate.state });
}

export interface InsertedRow {
  job_id: string;
  id: string;
  /** An ISO string: insert_job returns JSON. */
  created_at: Date | string;
  scheduled_at: Date | string;
  max_attempts: number;
}

/** insert-job's $1..$14. */
function insertParams(request: PreparedGraphileEnqueue, keepScheduledAt: number | null): unknown[] {
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

async function insertJob(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  keepScheduledAt: number | null,
): Promise<OjsJob> {
  const { rows } = await statement<{ result: InsertedRow }>(client, settings, 'insert-job', [
    ...insertParams(request, keepScheduledAt),
    request.token,
  ]);
  return createdView(request, rows[0]!.result);
}

function createdView(request: PreparedGraphileEnqueue, row: InsertedRow): OjsJob {
  const { job, prepared } = request;
  const createdAt = new Date(row.created_at);
  const scheduledAt = new Date(row.scheduled_at);
  return {
    id: row.id,
    type: job.type,
    queue: job.queue ?? DEFAULT_QUEUE,
    args: request.args,
    meta: request.meta,
    // Graphile's run_at defaults to the transaction's now(), created_at is the later
    // clock_timestamp(): a job due now reads available, as getJob would say.
    state: scheduledAt.getTime() > createdAt.getTime() ? 'scheduled' : 'available',
    attempt: 0,
    max_attempts: row.max_attempts,
    priority: job.priority ?? 0,
    created_at: createdAt.toISOString(),
    scheduled_at: scheduledAt.toISOString(),
    unique: prepared?.policy ?? null,
    uniqueness_key: prepared?.key ?? null,
  };
}

interface JobRow {
  job_id: string;
  id: string;
  type: string;
  queue: string;
  args: JsonValue | null;
  meta: Record<string, JsonValue>;
  policy: UniquePolicy | null;
  fingerprint: string | null;
  state: OjsJobState;
  attempt: number;
  max_attempts: number;
  priority: number;
  /** Dates from a query's row; ISO strings inside lock_and_read's JSON. */
  created_at: Date | string;
  scheduled_at: Date | string;
  completed_at: Date | string | null;
  replaced_by: string | null;
}

/** OJS INFO for a job the adapter enqueued, or null. */
export async function readJob(client: PgClientLike, sql: GraphileWorkerSql, ojsId: string): Promise<OjsJob | null> {
  const { rows } = await client.query<JobRow>(sql.text('get-job'), [ojsId]);
  return rows[0] ? toOjsJob(rows[0]) : null;
}

function toOjsJob(row: JobRow): OjsJob {
  const view: OjsJob = {
    id: row.id,
    type: row.type,
    queue: row.queue,
    // Graphile deletes a job's row (and payload) when it completes or is cancelled; the ledger
    // does not keep a second copy of every payload, so a finished job's args read as null.
    args: row.args,
    meta: row.meta,
    state: row.state,
    attempt: row.attempt,
    max_attempts: row.max_attempts,
    priority: row.priority,
    created_at: new Date(row.created_at).toISOString(),
    scheduled_at: new Date(row.scheduled_at).toISOString(),
    unique: row.policy,
    uniqueness_key: row.fingerprint,
  };
  if (row.completed_at !== null && TERMINAL_STATES.includes(row.state)) view.completed_at = new Date(row.completed_at).toISOString();
  if (row.replaced_by !== null) view.replaced_by = row.replaced_by;
  return view;
}
