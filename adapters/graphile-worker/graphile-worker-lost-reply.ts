/**
 * A reply lost with the connection after a write was sent: whether the write committed, told by
 * the request token its ledger row carries (jobs.request_token), looked up on a fresh connection
 * once nothing of the lost session can commit any more. The engine (graphile-worker-enqueue.ts)
 * and the batch path (graphile-worker-add-job.ts) call it; BullMQ's adapter needs no such step,
 * as its one script answers a re-sent add with the first outcome.
 */
import { BackendError } from '../../src/errors.js';
import type { InsertedRow } from './graphile-worker-job-view.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { SchemaHandle } from './graphile-worker-schema-handle.js';

/** Runs `body` on a fresh connection (not the one that was lost), releasing it afterwards. */
export type Reconnect = <T>(body: (client: PgClientLike) => Promise<T>) => Promise<T>;

/** How long the lost-reply check waits for the lost session to end (or for the key's lock). */
const RECOVERY_WAIT_MS = 5_000;

/**
 * Whether a client's `processID` is the pid of its server session, checked once per client. A
 * pooler such as PgBouncer answers with ids of its own, and a check that waited for such an id
 * to vanish from pg_stat_activity would conclude "ended" while the statement may still commit.
 */
const sessionPidChecked = new WeakMap<object, boolean>();

export async function noteSessionPid(client: PgClientLike): Promise<void> {
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
 * How a write is looked up on a fresh connection: what it wrote when it committed, null when it
 * did not; throws when it cannot tell (the check is then `written: 'unknown'`). `ended`: asked
 * once nothing of the lost session can commit any more (recoverRequest's second look).
 */
export type FindWrite<T> = (client: PgClientLike, ended: boolean) => Promise<T | null>;

/** An inserted record (insert, replace, a batch's), by its request token on the ledger. */
export function findRequest(handle: SchemaHandle, key: string, token: string): FindWrite<InsertedRow> {
  return async (client) =>
    (await client.query<{ result: InsertedRow }>(handle.sql.text('find-request'), [key, token])).rows[0]?.result ?? null;
}

/**
 * A write found by its transaction's id (`txid`, txid_current() inside it): committed or not, as
 * the server tells (transaction-status.sql), whatever was written since. For an x_successor add,
 * whose pending row the key's next add overwrites (so no token lookup can say "absent" for
 * certain). Still running, it is not found yet (recoverRequest then waits for the key's lock,
 * which the lost transaction holds until it ends); still running after that, or an id too old to
 * tell, it cannot tell.
 */
export function findTransaction(handle: SchemaHandle, txid: string): FindWrite<true> {
  return async (client, ended) => {
    const { status } = (await client.query<{ status: string | null }>(handle.sql.text('transaction-status'), [txid])).rows[0]!;
    if (status === 'committed') return true;
    if (status === 'aborted') return null;
    if (status === 'in progress' && !ended) return null;
    throw new Error(`the transaction's status is ${status === null ? 'no longer known' : status}`);
  };
}

/**
 * After a connection lost once a committing statement was sent: looks the write of `key` up
 * with `find`, on a fresh connection. Found: it committed (what `find` answers). Not found once the lost
 * session has ended (nothing of it can commit any more): nothing committed, `written: false`.
 * Cannot tell (no `reconnect`, or the check failed): `written: 'unknown'`.
 */
export async function recoverRequest<T>(
  reconnect: Reconnect | undefined,
  handle: SchemaHandle,
  key: string,
  find: FindWrite<T>,
  lost: LostWrite,
): Promise<T> {
  const what = `enqueue: the connection was lost after the write was sent (${messageOf(lost.error)})`;
  if (!reconnect) throw new BackendError('graphile-worker', `${what}; it may have committed`, { cause: lost.error, written: 'unknown' });
  const pid = sessionPidChecked.get(lost.client) === true ? (lost.client as { processID?: unknown }).processID : undefined;
  let row: T | null;
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
        const seen = await find(client, false);
        if (seen) return seen;
        if (lost.heldKeyLock) {
          // The lost transaction holds the key's lock until it commits or rolls back (behind a
          // transaction pooler too: the server connection stays assigned for the transaction).
          await client.query('begin');
          try {
            await client.query(`set local lock_timeout = ${RECOVERY_WAIT_MS}`);
            await client.query(handle.sql.text('lock-key'), [key]);
            return await find(client, true);
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
        while ((await client.query(handle.sql.text('session-alive'), [pid])).rows.length > 0) {
          if (Date.now() > deadline) throw new Error(`the lost session (backend ${pid}) is still running`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return await find(client, true);
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
  throw new BackendError('graphile-worker', `${what}; it did not commit (checked by its request token or its transaction's id)`, {
    cause: lost.error,
    written: false,
  });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
