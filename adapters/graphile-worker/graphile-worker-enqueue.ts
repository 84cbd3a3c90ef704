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
 *      (x_update), or record the duplicate attempt (x_period_anchor "last_duplicate"), or keep the
 *      add as the running job's pending successor (x_successor, keepSuccessor below).
 * The decision runs in Node between statements. Doing it in plpgsql would save round trips but
 * write the spec's rules a second time, in a second language; the one shortcut taken in SQL is
 * the case with no candidate at all, where there is nothing to decide.
 */
import { reportOnlyEnqueue } from './graphile-worker-report-only.js';
import { decideUniqueConflict, type UniqueConflictDecision } from '../../src/conflict-decision.js';
import { BackendError, InvalidJobInputError } from '../../src/errors.js';
import type { OjsJob } from '../../src/job.js';
import { TERMINAL_STATES } from '../../src/job-state.js';
import { uuidv7 } from '../../src/uuid-v7.js';
import { scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import type { UpdateField } from '../../src/unique-policy.js';
import { isConnectionLoss, isRetryableConflict, OWN_TRANSACTION_ATTEMPTS, translatePgError } from './graphile-worker-errors.js';
import { assertGraphileReliances, recheckReliancesAfter } from './graphile-worker-host.js';
import type { SqlFileName } from './generated/sql.js';
import {
  candidateFinishedAt,
  candidateView,
  createdView,
  readJob,
  replacedView,
  type CandidateRow,
  type InsertedRow,
} from './graphile-worker-job-view.js';
import {
  findRequest,
  findTransaction,
  messageOf,
  noteSessionPid,
  recoverRequest,
  type FindWrite,
  type Reconnect,
} from './graphile-worker-lost-reply.js';
import { runQuery, type PgClientLike, type PgQueryResultLike } from './graphile-worker-pg.js';
import { insertParams, type PreparedGraphileEnqueue } from './graphile-worker-request.js';
import type { SchemaHandle } from './graphile-worker-schema-handle.js';

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
  /**
   * Without `ownTransaction`: told when the enqueue kept an x_successor, with the transaction's
   * id, by which its owner settles a lost COMMIT reply (findTransaction).
   */
  successorKept?: (txid: string) => void;
}

/** Runs the enqueue on `client` (see {@link EnqueueMode}). */
export async function enqueueOnClient(
  client: PgClientLike,
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  mode: EnqueueMode,
): Promise<EnqueueResult> {
  const { prepared } = request;
  if (prepared?.reportOnly)
    return reportOnlyEnqueue(request, prepared, handle.replaceActive, (next) => enqueueOnClient(client, handle, next, mode));
  const undone = mode.undoneOnError ?? mode.ownTransaction;
  await assertGraphileReliances(client, handle.sql);
  if (!prepared) {
    // A job without a policy is one statement; no transaction of our own is needed. In
    // autocommit its ledger row has no key to look its token up by, so a lost reply is 'unknown'.
    try {
      return { outcome: 'created', job: await insertJob(client, handle, request, null) };
    } catch (error) {
      recheckReliancesAfter(error, client, handle.sql);
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
        return await decideAndApply(client, handle, request, prepared, mode);
      } catch (error) {
        if (!mode.ownTransaction || attempt >= OWN_TRANSACTION_ATTEMPTS || !isRetryableConflict(error)) throw error;
      }
    }
  } catch (error) {
    recheckReliancesAfter(error, client, handle.sql);
    // On the adapter's own path every write happens in one statement or one transaction that
    // was rolled back (or whose commit was checked), so a failure wrote nothing.
    throw translatePgError(error, { operation: 'enqueue', requestedId: request.job.id, rolledBack: undone });
  }
}

interface LockAndRead {
  now: number;
  candidates: CandidateRow[];
}

async function decideAndApply(
  client: PgClientLike,
  handle: SchemaHandle,
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
    const first = await statement<{ result: { inserted: InsertedRow } | LockAndRead }>(client, handle, 'try-enqueue', [
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
      const row = await recoverRequest(mode.reconnect, handle, prepared.key, findRequest(handle, prepared.key, request.token), {
        error,
        client,
        heldKeyLock: false,
      });
      return { outcome: 'created', job: createdView(request, row) };
    }
    throw error;
  }
  if ('inserted' in attempt) return { outcome: 'created', job: createdView(request, attempt.inserted) };
  const early = decide(handle, prepared, attempt);
  // Read-only only when nothing is to be written: a `last_duplicate` anchor records the attempt
  // (touch), even on ignore and reject, so those take the locked path too.
  if ((early.action === 'ignore' || early.action === 'reject') && !early.touch) {
    await refuseTakenId(client, handle, request, attempt);
    // Duplicate counts: the one write of this path (in autocommit on the adapter's own path).
    return settle(early, attempt, await countDuplicate(client, handle, request, attempt, early.existing.id, ownTransaction));
  }

  // An insert beside other records, a replace, an update or a touch: write under the key's lock,
  // held to commit, deciding again on what the locked read shows.
  if (ownTransaction) await client.query('begin');
  try {
    const read = (await statement<{ result: LockAndRead }>(client, handle, 'lock-and-read', [prepared.key, prepared.policy.states]))
      .rows[0]!.result;
    const decision = decide(handle, prepared, read);
    let result: EnqueueResult;
    /** x_successor: the transaction's id, which settles a lost COMMIT reply. */
    let keptIn: string | undefined;
    if (decision.action === 'insert') {
      result = { outcome: 'created', job: await insertJob(client, handle, request, null) };
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
          handle,
          'replace-jobs',
          [...insertParams(request, decision.scheduledAt), superseded.map((c) => c.job_id), handle.replaceActive, request.token],
        )
      ).rows[0]!.result;
      const job = createdView(request, applied.inserted);
      const finishedAt = new Map(applied.cancelled.map((row) => [row.job_id, row.finished_at]));
      // Every live candidate was locked by lock-and-read, so each one was cancelled: its view is
      // the one just read, now cancelled by this job. A finished one is left as it was read.
      const [replaced, ...others] = superseded.map((c) =>
        TERMINAL_STATES.includes(c.state) ? candidateView(c) : replacedView(c, finishedAt.get(c.job_id)!, job.id),
      );
      result =
        others.length > 0
          ? { outcome: 'replaced', job, replaced: replaced!, also_replaced: others }
          : { outcome: 'replaced', job, replaced: replaced! };
    } else {
      // The id check first, as on the read-only path: a taken id writes nothing, not even a touch.
      await refuseTakenId(client, handle, request, read);
      if (decision.touch) {
        const touched = decision.touch.map((candidate) => read.candidates.find((c) => c.id === candidate.id)!.job_id);
        await statement(client, handle, 'touch-jobs', [touched, prepared.policy.period]);
      }
      // Duplicate counts: before an update, whose answer reads the job back with its count.
      const counted = await countDuplicate(client, handle, request, read, decision.existing.id, false);
      if (decision.action === 'update') {
        const existing = read.candidates.find((candidate) => candidate.id === decision.existing.id)!;
        result = await updateJob(client, handle, request, existing, decision.fields, read.now, decision.scheduledAtLimit);
      } else if (decision.action === 'successor') {
        ({ result, txid: keptIn } = await keepSuccessor(client, handle, request, read, decision.existing.id));
        if (!ownTransaction) mode.successorKept?.(keptIn);
        if (counted) {
          result.job.duplicate_count = counted.duplicate_count;
          result.job.last_duplicate_at = new Date(counted.last_duplicate_at).toISOString();
        }
      } else if (decision.action === 'reject') {
        // A reject that touched still writes (the attempt moved the window): commit, then throw.
        if (ownTransaction) await commit(client, mode, handle, prepared.key, 'untracked');
        throw decision.error;
      } else {
        result = settle(decision, read, counted);
      }
    }
    if (ownTransaction) {
      const wrote =
        decision.action === 'insert' || decision.action === 'replace'
          ? findRequest(handle, prepared.key, request.token)
          : keptIn !== undefined
            ? findTransaction(handle, keptIn)
            : decision.action === 'update' || decision.touch || handle.countDuplicates
              ? 'untracked'
              : false;
      await commit(client, mode, handle, prepared.key, wrote);
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
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  existing: CandidateRow,
  fields: UpdateField[],
  now: number,
  scheduledAtLimit: number | undefined,
): Promise<EnqueueResult> {
  const { job, placement } = request;
  // x_max_wait: the due time never passes the cap the decision computed from the first add
  // (the new job's own time, or the database's now when it has none, as update_job fills it).
  const requested = job.scheduled_at === undefined ? null : scheduledAtMs(job.scheduled_at)!;
  const runAt = scheduledAtLimit !== undefined && scheduledAtLimit < (requested ?? now) ? scheduledAtLimit : requested;
  const { changed } = (
    await statement<{ result: { changed: UpdateField[] } }>(client, handle, 'update-job', [
      existing.job_id,
      fields,
      request.payload,
      JSON.stringify(request.meta),
      job.priority ?? 0,
      placement.priority,
      job.max_attempts ?? null,
      runAt === null ? null : new Date(runAt).toISOString(),
    ])
  ).rows[0]!.result;
  return { outcome: 'updated', job: (await readJob(client, handle.sql, existing.id))!, changed };
}

/** An error from {@link commit}, already settled by the token check (no rollback to send). */
class CommitChecked {
  constructor(readonly error: unknown) {}
}

/**
 * COMMIT of the adapter's own transaction. A lost reply to it is settled by looking the write up
 * (`wrote`: an inserted record by its request token, a kept successor by its transaction's id): committed → returns
 * (the caller returns the outcome it computed); not committed → written false; cannot tell →
 * written 'unknown'. A transaction that wrote nothing has nothing to check; one that wrote
 * without a token (`untracked`: an update, a touch, a duplicate count) is written 'unknown'.
 */
async function commit(
  client: PgClientLike,
  mode: EnqueueMode,
  handle: SchemaHandle,
  key: string,
  wrote: FindWrite<unknown> | 'untracked' | false,
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
      await recoverRequest(mode.reconnect, handle, key, wrote, { error, client, heldKeyLock: true });
    } catch (settled) {
      throw new CommitChecked(settled);
    }
  }
}

/** One of the enqueue's statements, prepared or not as `handle` say (GraphileWorkerSql.query). */
function statement<R>(client: PgClientLike, handle: SchemaHandle, name: SqlFileName, values: unknown[]): Promise<PgQueryResultLike<R>> {
  return runQuery<R>(client, handle.sql.query(name, values, handle.preparedStatements));
}

function decide(handle: SchemaHandle, prepared: PreparedUnique, read: LockAndRead): UniqueConflictDecision {
  return decideUniqueConflict({
    policy: prepared.policy,
    uniquenessKey: prepared.key,
    now: read.now,
    // seq = Graphile's job id: a bigserial, and one key's inserts are serialised by its head-row
    // lock, so it increases in insertion order. It breaks ties on created_at (milliseconds here,
    // so ties are common under load), as insertionOrder asks; without it the tie fell to the OJS
    // ids compared as text ("10" < "9", or any caller-chosen id). Nothing in SQL orders the
    // candidates: the core's decideConflict alone picks "the existing one" and the cancel order.
    candidates: read.candidates.map((candidate) => ({
      ...candidate,
      seq: Number(candidate.job_id),
      // Read only by a finished_at anchor, computed only for it.
      finished_at: prepared.policy.x_period_anchor === 'finished_at' ? candidateFinishedAt(candidate) : null,
    })),
    canReplaceActive: handle.replaceActive,
  });
}

/**
 * x_successor: keeps the add as the key's one pending successor of the running `holderId`
 * (keep-successor.sql), in the transaction of the locked read, which holds the holder's Graphile
 * row: it cannot finish (and its trigger promote the successor) before this commits. The id is the
 * caller's, else a UUIDv7: no Graphile id exists before the promotion's add_job. Also answers the
 * transaction's id, which settles a lost COMMIT reply (findTransaction).
 */
async function keepSuccessor(
  client: PgClientLike,
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  read: LockAndRead,
  holderId: string,
): Promise<{ result: EnqueueResult; txid: string }> {
  const holder = read.candidates.find((candidate) => candidate.id === holderId)!;
  const params = insertParams(request, null);
  // insert-job's $8, the OJS id.
  params[7] = request.job.id ?? uuidv7(read.now);
  const { id, xid } = (
    await statement<{ result: { id: string; xid: string } }>(client, handle, 'keep-successor', [holder.job_id, ...params, request.token])
  ).rows[0]!.result;
  return { result: { outcome: 'deduplicated', job: candidateView(holder), successor: { id } }, txid: xid };
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
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  read: LockAndRead,
): Promise<void> {
  const id = request.job.id;
  if (id === undefined) return;
  const taken =
    read.candidates.some((candidate) => candidate.id === id) ||
    (await statement<{ taken: boolean }>(client, handle, 'id-taken', [id])).rows[0]!.taken;
  if (taken) throw new InvalidJobInputError([{ path: 'id', message: `a job with id ${id} already exists` }]);
}

/** The outcome of an `ignore` or `reject` decision, from the read it was made on and the count it took. */
function settle(
  decision: Extract<UniqueConflictDecision, { action: 'ignore' | 'reject' }>,
  read: LockAndRead,
  counted: DuplicateCount | null,
): EnqueueResult {
  if (decision.action === 'reject') throw decision.error;
  const job = candidateView(read.candidates.find((candidate) => candidate.id === decision.existing.id)!);
  if (counted) {
    job.duplicate_count = counted.duplicate_count;
    job.last_duplicate_at = new Date(counted.last_duplicate_at).toISOString();
  }
  return { outcome: 'deduplicated', job };
}

interface DuplicateCount {
  duplicate_count: number;
  /** Epoch ms, database clock. */
  last_duplicate_at: number;
}

/**
 * Duplicate counts (docs/decisions.md), with the entry point's `countDuplicates`: counts this enqueue on the job it met (`existingId`, an
 * OJS id among `read`'s candidates), once per request token; the job's count after it.
 * `ownStatement`: the statement runs in autocommit (the adapter's own read-only path), so its
 * commit may skip the WAL flush wait; never in a transaction of the caller's or the adapter's.
 */
async function countDuplicate(
  client: PgClientLike,
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  read: LockAndRead,
  existingId: string,
  ownStatement: boolean,
): Promise<DuplicateCount | null> {
  // Off (the default): no statement, nothing written.
  if (!handle.countDuplicates) return null;
  const jobId = read.candidates.find((candidate) => candidate.id === existingId)!.job_id;
  return (await statement<{ result: DuplicateCount | null }>(client, handle, 'count-duplicate', [jobId, request.token, ownStatement]))
    .rows[0]!.result;
}

async function insertJob(
  client: PgClientLike,
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
  keepScheduledAt: number | null,
): Promise<OjsJob> {
  const { rows } = await statement<{ result: InsertedRow }>(client, handle, 'insert-job', [
    ...insertParams(request, keepScheduledAt),
    request.token,
  ]);
  return createdView(request, rows[0]!.result);
}
