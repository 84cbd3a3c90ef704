/**
 * One unique enqueue on Graphile Worker, on one connection: the heart of the adapter.
 *
 * In one transaction (the adapter's own, or the caller's):
 *   1. lock-and-read: lock the key's head row (serialising enqueues of the key, spec §8.1), lock
 *      the live candidates' Graphile rows, read every candidate's OJS state and the DB clock;
 *   2. decide with the core's `decideConflict` (the §5–§9 rules are written once, in src/);
 *   3. apply: insert through Graphile's `add_job` without a job key, and for replace cancel the
 *      duplicates, all committed together.
 * The decision runs in Node between two statements of the transaction. Doing it in plpgsql
 * would save a round trip but write the spec's rules a second time, in a second language.
 */
import { decideConflict } from '../../src/conflict-decision.js';
import { InvalidUniquePolicyError, type ValidationIssue } from '../../src/errors.js';
import type { JobInput, JsonValue, OjsJob, OjsJobState } from '../../src/job.js';
import { normalizeJson } from '../../src/json-normalize.js';
import { prepareUnique, scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import type { UniquePolicy } from '../../src/unique-policy.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
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
}

/** An enqueue whose input is already validated: the result of {@link prepareGraphileEnqueue}. */
export interface PreparedGraphileEnqueue {
  job: JobInput;
  prepared: PreparedUnique | null;
  args: JsonValue;
  meta: Record<string, JsonValue>;
  placement: GraphilePlacement;
}

const SMALLINT = { min: -32768, max: 32767 };

/**
 * Validates everything before any I/O (policy, key, JSON-ness of args and meta, Graphile's
 * smallint columns), so a bad job is refused with nothing written.
 */
export function prepareGraphileEnqueue(job: JobInput, placement: GraphilePlacement): PreparedGraphileEnqueue {
  const prepared = prepareUnique(job);
  const issues: ValidationIssue[] = [];
  const args = normalizeJson(job.args, 'args');
  const meta = normalizeJson(job.meta ?? {}, 'meta');
  for (const check of [args, meta]) if (!check.ok) issues.push(check.issue);
  for (const [path, value] of [
    ['max_attempts', job.max_attempts],
    ['priority', placement.priority],
  ] as const) {
    if (value !== undefined && value !== null && (value < SMALLINT.min || value > SMALLINT.max)) {
      issues.push({ path, message: `must fit Graphile Worker's smallint column (${SMALLINT.min}..${SMALLINT.max})` });
    }
  }
  if (issues.length > 0 || !args.ok || !meta.ok) throw new InvalidUniquePolicyError(issues);
  return { job, prepared, args: args.value, meta: meta.value as Record<string, JsonValue>, placement };
}

/**
 * Runs the enqueue on `client`. With `ownTransaction` the adapter opens and commits its own
 * transaction; without, the caller is inside BEGIN … COMMIT and everything joins their
 * transaction (and rolls back with it).
 */
export async function enqueueOnClient(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  ownTransaction: boolean,
): Promise<EnqueueResult> {
  const { prepared } = request;
  if (!prepared) {
    // A job without a policy is one statement; no transaction of our own is needed.
    try {
      return { outcome: 'created', job: await insertJob(client, settings.sql, request, null) };
    } catch (error) {
      throw translatePgError(error, { operation: 'enqueue', requestedId: request.job.id, rolledBack: ownTransaction });
    }
  }
  if (ownTransaction) await client.query('begin');
  try {
    const result = await decideAndApply(client, settings, request, prepared);
    if (ownTransaction) await client.query('commit');
    return result;
  } catch (error) {
    if (ownTransaction) await client.query('rollback').catch(() => undefined);
    throw translatePgError(error, { operation: 'enqueue', requestedId: request.job.id, rolledBack: ownTransaction });
  }
}

interface LockAndRead {
  now: number;
  candidates: { job_id: string; id: string; state: OjsJobState; created_at: number; scheduled_at: number }[];
}

async function decideAndApply(
  client: PgClientLike,
  settings: EnqueueSettings,
  request: PreparedGraphileEnqueue,
  prepared: PreparedUnique,
): Promise<EnqueueResult> {
  const { sql } = settings;
  const read = await client.query<{ result: LockAndRead }>(sql.text('lock-and-read'), [prepared.key, prepared.policy.states]);
  const { now, candidates } = read.rows[0]!.result;
  const decision = decideConflict({
    policy: prepared.policy,
    uniquenessKey: prepared.key,
    now,
    candidates,
    canReplaceActive: settings.replaceActive,
  });
  switch (decision.action) {
    case 'insert':
      return { outcome: 'created', job: await insertJob(client, sql, request, null) };
    case 'ignore':
      return { outcome: 'deduplicated', job: (await readJob(client, sql, decision.existing.id))! };
    case 'reject':
      throw decision.error;
    case 'replace': {
      // Insert first, then cancel: the cancelled rows must name their replacement's id, which is
      // Graphile's id unless the caller chose one. Both commit together, so no reader ever sees
      // the new job beside the old ones, or neither (§5.2 "cancelled before the new job" holds
      // for every observer).
      const job = await insertJob(client, sql, request, decision.scheduledAt);
      const graphileIds = decision.cancel.map((candidate) => graphileIdOf(candidates, candidate.id));
      await client.query(sql.text('cancel-jobs'), [graphileIds, job.id, settings.replaceActive]);
      const [replaced, ...others] = await Promise.all(decision.cancel.map(async (candidate) => (await readJob(client, sql, candidate.id))!));
      return others.length > 0 ? { outcome: 'replaced', job, replaced: replaced!, also_replaced: others } : { outcome: 'replaced', job, replaced: replaced! };
    }
  }
}

function graphileIdOf(candidates: LockAndRead['candidates'], ojsId: string): string {
  return candidates.find((candidate) => candidate.id === ojsId)!.job_id;
}

interface InsertedRow {
  job_id: string;
  id: string;
  created_at: Date;
  scheduled_at: Date;
  max_attempts: number;
}

async function insertJob(client: PgClientLike, sql: GraphileWorkerSql, request: PreparedGraphileEnqueue, keepScheduledAt: number | null): Promise<OjsJob> {
  const { job, prepared, placement } = request;
  const runAt = keepScheduledAt !== null ? new Date(keepScheduledAt) : job.scheduled_at === undefined ? null : new Date(scheduledAtMs(job.scheduled_at)!);
  const policy: UniquePolicy | null = prepared?.policy ?? null;
  const { rows } = await client.query<InsertedRow>(sql.text('insert-job'), [
    job.type,
    JSON.stringify(request.args),
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
  ]);
  const row = rows[0]!;
  return {
    id: row.id,
    type: job.type,
    queue: job.queue ?? DEFAULT_QUEUE,
    args: request.args,
    meta: request.meta,
    // Graphile's run_at defaults to the transaction's now(), created_at is the later
    // clock_timestamp(): a job due now reads available, as getJob would say.
    state: row.scheduled_at.getTime() > row.created_at.getTime() ? 'scheduled' : 'available',
    attempt: 0,
    max_attempts: row.max_attempts,
    priority: job.priority ?? 0,
    created_at: row.created_at.toISOString(),
    scheduled_at: row.scheduled_at.toISOString(),
    unique: policy,
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
  created_at: Date;
  scheduled_at: Date;
  completed_at: Date | null;
  replaced_by: string | null;
}

/** OJS INFO for a job the adapter enqueued, or null. */
export async function readJob(client: PgClientLike, sql: GraphileWorkerSql, ojsId: string): Promise<OjsJob | null> {
  const { rows } = await client.query<JobRow>(sql.text('get-job'), [ojsId]);
  const row = rows[0];
  if (!row) return null;
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
    created_at: row.created_at.toISOString(),
    scheduled_at: row.scheduled_at.toISOString(),
    unique: row.policy,
    uniqueness_key: row.fingerprint,
  };
  if (row.completed_at !== null && (row.state === 'completed' || row.state === 'cancelled' || row.state === 'discarded')) {
    view.completed_at = row.completed_at.toISOString();
  }
  if (row.replaced_by !== null) view.replaced_by = row.replaced_by;
  return view;
}
