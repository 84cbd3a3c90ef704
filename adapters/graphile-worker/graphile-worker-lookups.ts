/**
 * The key lookups Graphile users ask of a deduplicator (BullMQ's `getDeduplicationJobId` and
 * `removeDeduplicationKey` are the hosts' own forms): which job holds a key, and releasing a key.
 * Shared by the backend and `makeUniqueWorkerUtils`.
 *
 * A key is named either by a job as it would be enqueued (its policy computes the key, and says
 * which jobs count: states, period, anchor) or by the key itself, `{ uniqueness_key }` as every
 * job view reports it (then a job holds the key while it is not finished: the live states).
 */
import { insertionOrder, isDuplicate } from '../../src/conflict-decision.js';
import { InvalidJobInputError } from '../../src/errors.js';
import type { KeyLookup } from '../../src/key-lookup.js';
import { type OjsJob } from '../../src/job.js';
import { LIVE_STATES, OJS_JOB_STATES, TERMINAL_STATES, type OjsJobState } from '../../src/job-state.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import { explainUniqueAdd, type UniqueExplanation } from '../../src/unique-explain.js';
import { candidateFinishedAt, candidateView, readJob, type CandidateRow } from './graphile-worker-job-view.js';
import { isRetryableConflict, OWN_TRANSACTION_ATTEMPTS, translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { PreparedGraphileEnqueue } from './graphile-worker-request.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/** A job as it would be enqueued, as a lookup: it must have a policy (no policy, no key). */
export function requestLookup(request: PreparedGraphileEnqueue): KeyLookup {
  if (!request.prepared) throw new InvalidJobInputError([{ path: 'unique', message: 'is required to name a uniqueness key' }]);
  return { key: request.prepared.key, policy: request.prepared.policy };
}

/** A job as it would be enqueued, prepared for an explanation: it must have a policy. */
export function requestPrepared(request: PreparedGraphileEnqueue): PreparedUnique {
  if (!request.prepared) throw new InvalidJobInputError([{ path: 'unique', message: 'is required to name a uniqueness key' }]);
  return request.prepared;
}

/** A key's candidates read without its lock (read-candidates.sql), and how to view one as a job. */
interface KeyCandidates {
  now: number;
  candidates: CandidateRow[];
  view(candidate: CandidateRow): OjsJob;
}

async function readCandidates(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  key: string,
  states: readonly OjsJobState[],
): Promise<KeyCandidates> {
  const { rows } = await client.query<{ result: { now: number; candidates: CandidateRow[] } }>(sql.text('read-candidates'), [key, states]);
  return { ...rows[0]!.result, view: candidateView };
}

/**
 * What an enqueue of the prepared job would do now (src/unique-explain.ts): every record under its
 * key, in every state, read from a committed snapshot without the key's lock; writes nothing.
 */
export async function explainUniqueJob(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  prepared: PreparedUnique,
  replaceActive: boolean,
): Promise<UniqueExplanation> {
  let read: KeyCandidates;
  try {
    read = await readCandidates(client, sql, prepared.key, OJS_JOB_STATES);
  } catch (error) {
    throw translatePgError(error, { operation: 'explainUnique', rolledBack: false });
  }
  const candidates = read.candidates.map((candidate) => ({
    id: candidate.id,
    queue: candidate.view.queue,
    state: candidate.state,
    created_at: candidate.created_at,
    scheduled_at: candidate.scheduled_at,
    seq: Number(candidate.job_id),
    last_duplicate_at: candidate.last_duplicate_at,
    finished_at: candidateFinishedAt(candidate),
    superseded: candidate.superseded,
  }));
  return explainUniqueAdd({ prepared, now: read.now, candidates, canReplaceActive: replaceActive });
}

/**
 * The job holding the key now: the one an enqueue under the lookup's policy would meet as "the
 * existing job" (the oldest it counts), or with no policy the oldest live job under the key; null
 * when none. A read of committed state, without the key's lock.
 */
export async function findUniqueJob(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  lookup: KeyLookup,
  countDuplicates: boolean,
): Promise<OjsJob | null> {
  let read: KeyCandidates;
  try {
    read = await readCandidates(client, sql, lookup.key, lookup.policy?.states ?? LIVE_STATES);
  } catch (error) {
    throw translatePgError(error, { operation: 'findUniqueJob', rolledBack: false });
  }
  const { policy } = lookup;
  const holding = read.candidates
    .filter((candidate) =>
      policy ? isDuplicate({ ...candidate, seq: Number(candidate.job_id) }, policy, read.now) : !TERMINAL_STATES.includes(candidate.state),
    )
    .sort((a, b) => insertionOrder({ ...a, seq: Number(a.job_id) }, { ...b, seq: Number(b.job_id) }));
  if (!holding[0]) return null;
  const view = read.view(holding[0]);
  if (!countDuplicates) return view;
  // Its duplicate count, which the candidates' read leaves out (it is every enqueue's read):
  // get-job's, one more statement for a lookup, only where counts are kept.
  const counted = await readJob(client, sql, view.id).catch((error: unknown) => {
    throw translatePgError(error, { operation: 'findUniqueJob', rolledBack: false });
  });
  if (counted?.duplicate_count !== undefined) {
    view.duplicate_count = counted.duplicate_count;
    view.last_duplicate_at = counted.last_duplicate_at!;
  }
  return view;
}

/**
 * Releases the key: every job recorded under it stops counting as its holder, so the next enqueue
 * of the key inserts. The jobs themselves are left as they are (a live one still runs; its view
 * still reports the key). Returns how many jobs stopped holding it (0 when none did). Its own
 * transaction, retried on a serialisation failure or deadlock.
 */
export async function releaseUniqueKey(client: PgClientLike, sql: GraphileWorkerSql, lookup: KeyLookup): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query('begin');
      const { rows } = await client.query<{ released: number }>(sql.text('release-key'), [lookup.key]);
      await client.query('commit');
      return rows[0]!.released;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      if (attempt < OWN_TRANSACTION_ATTEMPTS && isRetryableConflict(error)) continue;
      throw translatePgError(error, { operation: 'releaseUniqueKey', rolledBack: true });
    }
  }
}
