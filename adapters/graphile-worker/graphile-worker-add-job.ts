/**
 * The enqueue paths Graphile users call, all sharing {@link enqueueOnClient}:
 *  - `addJobWithClient`: on the caller's own `pg` client inside their BEGIN … COMMIT (graphile
 *    #538), so the job, its ledger record and the caller's rows commit or roll back together;
 *  - `addJobsOnClient`: a batch in one transaction (all or nothing, like Graphile's addJobs).
 * A job without `unique` goes to Graphile exactly as its own addJob sends it.
 */
import type { AddJobsJobSpec, Job } from 'graphile-worker';
import { InvalidJobInputError } from '../../src/errors.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { enqueueOnClient } from './graphile-worker-enqueue.js';
import { findRequest, findTransaction, recoverRequest, type Reconnect } from './graphile-worker-lost-reply.js';
import type { PreparedGraphileEnqueue } from './graphile-worker-request.js';
import { schemaHandle, type SchemaHandle, type UniqueEntryPointOptions } from './graphile-worker-schema-handle.js';
import { isConnectionLoss, isRetryableConflict, OWN_TRANSACTION_ATTEMPTS, translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { observedEnqueue, observeGraphileAdd } from './graphile-worker-telemetry.js';
import { reportUniqueAdds } from './graphile-worker-unique-add-hook.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import {
  hasUniquePolicy,
  taskSpecToEnqueue,
  withEntryPointPolicy,
  type PlainTaskSpec,
  type TaskIdentifier,
  type TaskPayload,
  type UniqueTaskSpec,
  type UniqueTaskSpecWithPolicy,
} from './graphile-worker-task-spec.js';

/**
 * Adds a job on `client`, which the caller has put inside BEGIN … COMMIT. Nothing is committed
 * here: a rollback removes the job and its ledger record with the caller's own rows. The
 * adapter's schema must be installed (by `makeUniqueWorkerUtils`, the preset, or the backend).
 *
 * Under REPEATABLE READ or SERIALIZABLE a concurrent enqueue of the same key that committed first
 * surfaces as a `BackendError` (SQLSTATE 40001): retry the transaction, as for any such conflict.
 */
export function addJobWithClient<TIdentifier extends TaskIdentifier = string>(
  client: TransactionClientLike,
  identifier: TIdentifier,
  payload: TaskPayload<TIdentifier>,
  spec: UniqueTaskSpecWithPolicy,
  options?: UniqueEntryPointOptions,
): Promise<EnqueueResult>;
/** Without a policy (no spec, no `unique`, or `unique: null`): a plain Graphile job on `client`. */
export function addJobWithClient<TIdentifier extends TaskIdentifier = string>(
  client: TransactionClientLike,
  identifier: TIdentifier,
  payload: TaskPayload<TIdentifier>,
  spec?: PlainTaskSpec,
  options?: UniqueEntryPointOptions,
): Promise<Job>;
/** A spec whose type may or may not carry a policy: the result is whichever the value asks for. */
export function addJobWithClient<TIdentifier extends TaskIdentifier = string>(
  client: TransactionClientLike,
  identifier: TIdentifier,
  payload: TaskPayload<TIdentifier>,
  spec?: UniqueTaskSpec,
  options?: UniqueEntryPointOptions,
): Promise<EnqueueResult | Job>;
export async function addJobWithClient(
  client: TransactionClientLike,
  identifier: string,
  payload: unknown = {},
  given: UniqueTaskSpec = {},
  options: UniqueEntryPointOptions = {},
): Promise<EnqueueResult | Job> {
  const handle = schemaHandle(options);
  const spec = withEntryPointPolicy(handle.policies, identifier, given);
  if (!hasUniquePolicy(spec)) return addPlainJob(client, handle, identifier, payload, spec);
  if (isPool(client)) {
    // Each statement of a pool may run on another connection, in autocommit: the key's lock
    // would be released between the read and the insert, and strength silently lost.
    throw new InvalidJobInputError([
      {
        path: 'client',
        message: 'is a pool: check a client out (pool.connect()), BEGIN, call addJobWithClient, then COMMIT and release it',
      },
    ]);
  }
  const request = taskSpecToEnqueue(identifier, payload, spec);
  const result = await observedEnqueue(request, (traced) => enqueueInSavepoint(client, handle, traced));
  reportUniqueAdds(handle.onUniqueAdd, [{ identifier, queue: request.job.queue ?? DEFAULT_QUEUE, result }]);
  return result;
}

/** One unique add inside the caller's transaction, under a savepoint of its own. */
async function enqueueInSavepoint(
  client: TransactionClientLike,
  handle: SchemaHandle,
  request: PreparedGraphileEnqueue,
): Promise<EnqueueResult> {
  // A savepoint: SAVEPOINT fails (25P01) outside a transaction block, where the key's lock would
  // end with each statement; and on any failure the enqueue undoes its own writes, so the
  // caller's transaction never commits half of it (and stays usable).
  try {
    await client.query(`savepoint ${SAVEPOINT}`);
  } catch (error) {
    throw translatePgError(error, { operation: 'addJobWithClient', rolledBack: true }); // 25P01: not in a transaction
  }
  let result: EnqueueResult;
  try {
    result = await enqueueOnClient(client, handle, request, { ownTransaction: false, undoneOnError: true });
  } catch (error) {
    // Undone, or the connection (and with it the caller's transaction) is gone: nothing of this
    // enqueue can commit either way.
    await client
      .query(`rollback to savepoint ${SAVEPOINT}`)
      .then(
        () => client.query(`release savepoint ${SAVEPOINT}`),
        () => undefined,
      )
      .catch(() => undefined);
    throw error;
  }
  try {
    await client.query(`release savepoint ${SAVEPOINT}`);
  } catch (error) {
    // Only a lost connection fails here, and it takes the caller's transaction with it.
    throw translatePgError(error, { operation: 'addJobWithClient', rolledBack: true });
  }
  return result;
}

const SAVEPOINT = 'ojs_unique_enqueue';

/**
 * A client that can hold a transaction: a `pg.Client`, a checked-out `pg.PoolClient`, Graphile's
 * `withPgClient` client. A `pg.Pool` does not fit (its counters are typed `never` here).
 */
export type TransactionClientLike = PgClientLike & {
  readonly totalCount?: never;
  readonly idleCount?: never;
  readonly waitingCount?: never;
};

function isPool(client: unknown): boolean {
  const candidate = client as { totalCount?: unknown; idleCount?: unknown; connect?: unknown };
  return typeof candidate.totalCount === 'number' && typeof candidate.idleCount === 'number' && typeof candidate.connect === 'function';
}

async function addPlainJob(
  client: PgClientLike,
  handle: SchemaHandle,
  identifier: string,
  payload: unknown,
  spec: UniqueTaskSpec,
): Promise<Job> {
  try {
    const { rows } = await client.query<Job>(handle.sql.text('add-plain-job'), [
      identifier,
      JSON.stringify(payload ?? {}),
      spec.queueName ?? null,
      spec.runAt?.toISOString() ?? null,
      spec.maxAttempts ?? null,
      spec.jobKey ?? null,
      spec.priority ?? null,
      spec.flags ?? null,
      spec.jobKeyMode ?? null,
    ]);
    return { ...rows[0]!, task_identifier: identifier };
  } catch (error) {
    throw translatePgError(error, { operation: 'addJob', rolledBack: false });
  }
}

/** One `addJobs` entry: Graphile's (its payload typed by `GraphileWorker.Tasks`) with the OJS fields. */
export interface UniqueAddJobsSpec<TIdentifier extends TaskIdentifier = string> extends UniqueTaskSpec {
  identifier: TIdentifier;
  payload: TaskPayload<TIdentifier>;
}

/** An `addJobs` entry with an OJS policy. */
export type UniqueAddJobsSpecWithPolicy<TIdentifier extends TaskIdentifier = string> = UniqueAddJobsSpec<TIdentifier> & {
  unique: UniquePolicyInput;
};

/** An `addJobs` entry without a policy: Graphile's own `AddJobsJobSpec` (`unique` absent or null). */
export type PlainAddJobsSpec<TIdentifier extends TaskIdentifier = string> = AddJobsJobSpec<TIdentifier> & { unique?: null };

/**
 * Adds a batch in one transaction on `client` (not already in one): all or nothing, like
 * Graphile's addJobs. A `reject` duplicate anywhere rolls back the whole batch and throws.
 *
 * Keys are locked in key order, whatever the batch order, so two batches sharing keys cannot
 * deadlock; two entries with one key see each other (the second is the duplicate).
 */
export async function addJobsOnClient(
  client: PgClientLike,
  handle: SchemaHandle,
  specs: readonly UniqueAddJobsSpec[],
  reconnect?: Reconnect,
): Promise<EnqueueResult[]> {
  // Validate every entry before the first write. The ledger path never passes a job key, so a
  // Graphile jobKey in the same batch would be silently dropped: refused instead.
  const keyed = specs.findIndex((spec) => spec.jobKey !== undefined && spec.jobKey !== null);
  if (keyed >= 0) {
    throw new InvalidJobInputError([
      {
        path: `[${keyed}].jobKey`,
        message: 'a batch with unique jobs cannot also carry Graphile job keys: add keyed jobs in a separate addJobs call',
      },
    ]);
  }
  const requests: PreparedGraphileEnqueue[] = specs.map(({ identifier, payload, ...spec }, index) =>
    taskSpecToEnqueue(identifier, payload, spec, `[${index}]`),
  );
  return enqueueAllOnClient(client, handle, requests, { reconnect, operation: 'addJobs' });
}

/** What {@link enqueueAllOnClient} runs beside the batch. */
export interface EnqueueAllOptions {
  /** A fresh connection to settle a lost COMMIT reply by request token (see enqueueOnClient). */
  reconnect?: Reconnect | undefined;
  /** Names the operation in errors. */
  operation: string;
  /**
   * Runs inside the batch's transaction after its last entry, on the batch's client: what it
   * writes commits or rolls back with the batch. A throw rolls the batch back.
   */
  beforeCommit?: ((client: PgClientLike, results: readonly EnqueueResult[]) => Promise<void>) | undefined;
}

/**
 * The batch of {@link addJobsOnClient} over requests already prepared (validated): one
 * transaction, entries applied in key order, results in input order. Nothing of the batch is
 * visible to any other session (a worker's fetch included) until it commits.
 */
export async function enqueueAllOnClient(
  client: PgClientLike,
  handle: SchemaHandle,
  requests: readonly PreparedGraphileEnqueue[],
  options: EnqueueAllOptions,
): Promise<EnqueueResult[]> {
  // Each unique entry's span and count (its trace context in its flags), settled once the batch
  // has committed. When the batch fails, the entry that refused it is counted (`rejected` for a
  // duplicate); the others were undone with it: their spans end without an outcome.
  const observed = requests.map((request) => (request.prepared === null ? null : observeGraphileAdd(request)));
  const refused: { index?: number } = {};
  try {
    const results = await enqueueBatch(
      client,
      handle,
      observed.map((entry, index) => entry?.traced ?? requests[index]!),
      options,
      refused,
    );
    observed.forEach((entry, index) => entry?.observation.settled(results[index]!.outcome, results[index]!.job.id, results[index]));
    return results;
  } catch (error) {
    if (refused.index !== undefined) observed[refused.index]?.observation.failed(error);
    for (const entry of observed) entry?.observation.abandoned(error);
    throw error;
  }
}

/** {@link enqueueAllOnClient} without its telemetry; `refused.index` names the entry whose failure ended the last attempt. */
async function enqueueBatch(
  client: PgClientLike,
  handle: SchemaHandle,
  requests: readonly PreparedGraphileEnqueue[],
  options: EnqueueAllOptions,
  refused: { index?: number },
): Promise<EnqueueResult[]> {
  const { reconnect, operation } = options;
  const order = requests
    .map((request, index) => ({ index, key: request.prepared?.key ?? '' }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index));
  const results: EnqueueResult[] = new Array(requests.length);
  /** When an entry kept an x_successor: the batch's transaction id (a lost COMMIT reply is settled by it) and that entry's key. */
  const kept: { txid?: string; key?: string } = {};
  for (let attempt = 1; ; attempt++) {
    try {
      refused.index = undefined;
      kept.txid = kept.key = undefined;
      await client.query('begin');
      // Each entry's failure is undone by the batch's rollback: nothing of the batch is written.
      for (const { index } of order) {
        refused.index = index;
        results[index] = await enqueueOnClient(client, handle, requests[index]!, {
          ownTransaction: false,
          undoneOnError: true,
          successorKept: (txid) => Object.assign(kept, { txid, key: requests[index]!.prepared!.key }),
        });
      }
      refused.index = undefined;
      await options.beforeCommit?.(client, results);
      break;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      // The batch's transaction is the adapter's: rolled back as a serialisation failure or a
      // deadlock, it is run again (nothing of it committed; its request tokens are on no row).
      if (attempt < OWN_TRANSACTION_ATTEMPTS && isRetryableConflict(error)) continue;
      throw translatePgError(error, { operation, rolledBack: true });
    }
  }
  try {
    await client.query('commit');
  } catch (error) {
    if (!isConnectionLoss(error)) throw translatePgError(error, { operation, rolledBack: true });
    // A lost reply to COMMIT: one entry's request token tells whether the batch committed, or
    // the transaction's id when an entry kept a successor. An entry that updated a job in place
    // (x_update) or recorded a duplicate attempt wrote nothing either can be checked by.
    const wrote = requests.findIndex(
      (request, index) => request.prepared !== null && (results[index]!.outcome === 'created' || results[index]!.outcome === 'replaced'),
    );
    if (wrote >= 0) {
      const { key } = requests[wrote]!.prepared!;
      await recoverRequest(reconnect, handle, key, findRequest(handle, key, requests[wrote]!.token), { error, client, heldKeyLock: true });
    } else if (kept.txid !== undefined && kept.key !== undefined) {
      await recoverRequest(reconnect, handle, kept.key, findTransaction(handle, kept.txid), { error, client, heldKeyLock: true });
    } else if (
      requests.some(
        (request, index) =>
          request.prepared === null ||
          results[index]!.outcome === 'updated' ||
          request.prepared.policy.x_period_anchor === 'last_duplicate' ||
          handle.countDuplicates,
      )
    ) {
      // Only jobs without a policy, updates, duplicate attempts or duplicate counts were written:
      // no row to look up by key and token.
      await recoverRequest(undefined, handle, '', async () => null, { error, client, heldKeyLock: true });
    }
  }
  return results;
}
