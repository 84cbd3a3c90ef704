/**
 * Everything the adapter relies on in Graphile Worker beyond its public API, in one place.
 *
 * The adapter's SQL (sql/functions/*.sql, get-job.sql, add-plain-job.sql, install-trigger.sql)
 * reads `_private_jobs`, which Graphile documents as private and free to change in a minor
 * version, and calls `add_job` by argument name. Rather than trusting a Graphile migration number,
 * the adapter checks these objects themselves ({@link GRAPHILE_RELIANCES}, one catalog query):
 *  - at install (the preset's postmigrate hook, `createGraphileWorkerBackend`): when one is
 *    missing the adapter's schema is left as it is and a warning logged; the worker starts and
 *    plain adds work, since they only use Graphile's own functions;
 *  - before the first ledger operation on each connection (every unique add): a missing one
 *    fails the add with a `BackendError` naming it, before anything is written.
 * What a catalog cannot show (how Graphile's worker uses the rows) is {@link GRAPHILE_BEHAVIOURS}.
 * test/adapters/graphile-worker-host-contract.test.ts pins each item against the graphile-worker
 * the tests run, one test each, titled by the item.
 */
import { BackendError } from '../../src/errors.js';
import { translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/** One object of Graphile Worker's schema the adapter's SQL uses. */
export type GraphileReliance =
  | { kind: 'table'; id: string; relation: string; usedFor: string }
  | { kind: 'column'; id: string; relation: string; column: string; types: readonly string[]; usedFor: string }
  | { kind: 'function'; id: string; function: string; args: readonly string[]; returns: string; usedFor: string };

const TIMESTAMPTZ = 'timestamp with time zone';

function column(name: string, types: readonly string[], usedFor: string, relation = '_private_jobs'): GraphileReliance {
  return { kind: 'column', id: `${relation}.${name}`, relation, column: name, types, usedFor };
}

/** Graphile Worker's objects the adapter's SQL names, with the column types it can work with (as `format_type` spells them). */
export const GRAPHILE_RELIANCES: readonly GraphileReliance[] = [
  {
    kind: 'table',
    id: '_private_jobs',
    relation: '_private_jobs',
    usedFor:
      'the jobs table: the ledger joins it by id, its AFTER DELETE trigger records how each job ended, and its AFTER UPDATE trigger sees a job fail for good (x_successor)',
  },
  column('id', ['bigint'], "the ledger's job_id, and the key of every join and lock on Graphile's row"),
  column('payload', ['json', 'jsonb'], "a job's OJS args while Graphile holds its row"),
  column('run_at', [TIMESTAMPTZ], 'scheduled_at, and the scheduled, retryable and available states'),
  column('attempts', ['smallint', 'integer'], 'the attempt count, the retryable and discarded states, and fencing a running job'),
  column('max_attempts', ['smallint', 'integer'], 'the discarded state, and fencing a running job (attempts = max_attempts)'),
  column('locked_at', [TIMESTAMPTZ], 'the active state, and telling completed from cancelled when a row is deleted'),
  column('key', ['text'], 'cleared when a running job is fenced, so a later add with its job key makes a new job'),
  column('updated_at', [TIMESTAMPTZ], 'bumped when a running job is fenced or updated in place (x_update)'),
  column('priority', ['smallint', 'integer'], 'written when x_update copies a new priority onto an existing job'),
  column('revision', ['integer'], 'bumped when x_update changes a job in place, as Graphile bumps it on a jobKey replace'),
  column(
    'last_error',
    ['text'],
    "set by every failure (a worker's, permanently_fail_jobs), never by a fetch: the column of the x_successor failure trigger",
  ),
  {
    kind: 'function',
    id: 'add_job',
    function: 'add_job',
    args: ['identifier', 'payload', 'queue_name', 'run_at', 'max_attempts', 'job_key', 'priority', 'flags', 'job_key_mode'],
    returns: '_private_jobs',
    usedFor: 'every job the adapter adds, called with named arguments, returning the new row of _private_jobs',
  },
];

/**
 * What the OJS gateway's worker protocol (server/graphile-worker-job-fetcher.ts, server/sql/gateway-*.sql)
 * uses of Graphile Worker beyond {@link GRAPHILE_RELIANCES}: it takes, renews and ends jobs with
 * Graphile's own lock, as Graphile's get_job / complete_jobs / fail_jobs do. Checked when a
 * gateway store starts; pinned by the same contract test.
 */
export const GATEWAY_GRAPHILE_RELIANCES: readonly GraphileReliance[] = [
  column('locked_by', ['text'], "the gateway's lock on a job an HTTP worker holds (Graphile's worker id column)"),
  column('job_queue_id', ['integer'], "a job's named queue, locked with it as Graphile's get_job does"),
  column('is_available', ['boolean'], 'which jobs a gateway fetch may take, as get_job chooses them'),
  column('last_error', ['text'], "a failed job's error message, written on nack as fail_jobs writes it"),
  column('task_id', ['integer'], "a job's task, read back as its OJS type"),
  column('created_at', [TIMESTAMPTZ], "created_at of a job added with Graphile's own addJob"),
  {
    kind: 'table',
    id: '_private_job_queues',
    relation: '_private_job_queues',
    usedFor: "named queues: the gateway locks a job's queue row with the job, as get_job does",
  },
  column('id', ['integer'], 'the key the jobs join their named queue by', '_private_job_queues'),
  column('queue_name', ['text'], "a Graphile queue's name, the OJS queue of a job without a ledger record", '_private_job_queues'),
  column('locked_by', ['text'], "the queue's lock while a job of it runs", '_private_job_queues'),
  column('locked_at', [TIMESTAMPTZ], "the queue's lock while a job of it runs", '_private_job_queues'),
  column('is_available', ['boolean'], 'whether a named queue may hand out a job', '_private_job_queues'),
  { kind: 'table', id: '_private_tasks', relation: '_private_tasks', usedFor: 'task identifiers, the OJS type of a job' },
  column('id', ['integer'], 'the key jobs name their task by', '_private_tasks'),
  column('identifier', ['text'], "a task's identifier: the OJS type", '_private_tasks'),
];

/** Graphile Worker's stale-lock threshold, written as this interval in sql/functions/derived-state.sql and cancel-jobs.sql. */
export const GRAPHILE_STALE_LOCK_INTERVAL = '4 hours';

/**
 * How Graphile Worker's worker uses `_private_jobs`, as the adapter's SQL assumes it (no catalog
 * shows these; each has a contract test that runs a real worker).
 */
export const GRAPHILE_BEHAVIOURS = {
  completionDeletesLockedRow:
    "a worker deletes a job's row when the job succeeds, while the row is still locked (locked_at set): job_deleted() labels such a row completed",
  lastFailureKeepsRow:
    'a job that fails its last attempt keeps its row, unlocked, with attempts = max_attempts: derived_state() reads it as discarded',
  lastFailureUpdatesLockedAt:
    "a worker's failure of the last attempt is an UPDATE that sets last_error and leaves locked_at null: the AFTER UPDATE OF last_error trigger (job_failed()) adds the job's pending x_successor",
  exhaustedRowIsNeverFetched: 'a row with attempts = max_attempts is never fetched again: how cancel_jobs() fences a running job',
  fetchSkipsLockedRows:
    "workers fetch with FOR UPDATE SKIP LOCKED: lock_and_read() locks the live candidates' rows so no worker starts one before a replace cancels it",
  staleLockAfterFourHours: `a lock older than ${GRAPHILE_STALE_LOCK_INTERVAL} is stale and the job is fetched again: derived_state() and cancel_jobs() count a job as active only within it`,
  failureMovesRunAtByBackoff:
    'a failed attempt sets run_at to the failure\'s now() + exp(least(attempts, 10)) seconds: a job failed for good keeps no other finish time, so x_period_anchor "finished_at" derives it from run_at (candidateFinishedAt)',
  addJobFillsDefaults:
    "add_job without a job key inserts one row and returns it with Graphile's defaults applied (run_at, max_attempts: 25, which update_job also fills for x_update)",
} as const;

/** A reliance the schema does not meet, and what it holds instead (null: nothing of that name). */
export interface UnmetReliance {
  reliance: GraphileReliance;
  found: string | null;
}

/**
 * The reliances Graphile Worker's schema (of `sql`) does not meet, in one catalog query.
 * `reliances` is for tests. Errors are the driver's (callers translate them).
 */
export async function unmetGraphileReliances(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  reliances: readonly GraphileReliance[] = GRAPHILE_RELIANCES,
): Promise<UnmetReliance[]> {
  const { rows } = await client.query<{ id: string; ok: boolean; found: string | null }>(sql.text('read-graphile-reliances'), [
    JSON.stringify(reliances),
  ]);
  return rows.flatMap((row, index) => (row.ok ? [] : [{ reliance: reliances[index]!, found: row.found }]));
}

/** One unmet reliance, as the error and the warning say it. */
export function describeUnmet({ reliance, found }: UnmetReliance): string {
  switch (reliance.kind) {
    case 'table':
      return `${reliance.id} ${found === null ? 'is missing' : `is not an ordinary table (relkind ${found})`}`;
    case 'column':
      return `${reliance.id} ${found === null ? 'is missing' : `is ${found}, not ${reliance.types.join(' or ')}`}`;
    case 'function':
      return (
        `${reliance.function}(${reliance.args.join(', ')}) returning ${reliance.returns} ` +
        (found === null ? 'is missing' : `is not there (found: ${found})`)
      );
  }
}

/** What a unique add throws when Graphile's schema lacks a reliance: nothing was written. */
export function unmetReliancesError(sql: GraphileWorkerSql, unmet: readonly UnmetReliance[]): BackendError {
  const schema = `Graphile Worker's schema "${sql.names.workerSchema}"`;
  // Nothing at all: Graphile Worker was never migrated there (or the name is wrong).
  const nothing = unmet.length === GRAPHILE_RELIANCES.length && unmet.every(({ found }) => found === null);
  return new BackendError(
    'graphile-worker',
    (nothing
      ? `${schema} has no _private_jobs table and no add_job function: is Graphile Worker migrated there? ` +
        'makeUniqueWorkerUtils, a worker with makeUniqueJobsPreset, createGraphileWorkerBackend and `ojs-unique migrate` migrate it. '
      : `${schema} lacks what ojs-unique relies on: ${unmet.map(describeUnmet).join('; ')}. ` +
        'This graphile-worker version changed them: use an ojs-unique version that supports it. ') +
      "Unique adds are refused until then; Graphile's own adds and workers are unaffected.",
    { written: false },
  );
}

/** The clients (connections) on which each Graphile Worker schema's reliances were found met. */
const met = new WeakMap<object, Set<string>>();

/** Remembers that `client`'s database meets `sql`'s reliances (the installer just checked). */
export function noteReliancesMet(client: PgClientLike, sql: GraphileWorkerSql): void {
  let checked = met.get(client);
  if (!checked) met.set(client, (checked = new Set()));
  checked.add(sql.names.workerSchema);
}

/**
 * Refuses a ledger operation when Graphile's schema lacks a reliance, with a `BackendError`
 * naming each one. Checked once per connection and Graphile Worker schema: one catalog query, then nothing.
 */
export async function assertGraphileReliances(client: PgClientLike, sql: GraphileWorkerSql): Promise<void> {
  if (met.get(client)?.has(sql.names.workerSchema)) return;
  let unmet: UnmetReliance[];
  try {
    unmet = await unmetGraphileReliances(client, sql);
  } catch (error) {
    throw translatePgError(error, { operation: "checking Graphile Worker's schema", rolledBack: true });
  }
  if (unmet.length > 0) throw unmetReliancesError(sql, unmet);
  noteReliancesMet(client, sql);
}

/**
 * After a failed statement: an error saying an object is missing or changed (SQLSTATE class 42,
 * or 3F000) makes the next operation on `client` check the reliances again, so that a Graphile
 * migration run while this process was up is reported by name rather than as a bare SQL error.
 */
export function recheckReliancesAfter(error: unknown, client: PgClientLike, sql: GraphileWorkerSql): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (code.startsWith('42') || code === '3F000')) met.get(client)?.delete(sql.names.workerSchema);
}
