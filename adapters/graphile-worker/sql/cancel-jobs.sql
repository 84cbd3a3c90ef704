-- cancel-jobs: marks jobs cancelled in the ledger and takes them out of Graphile Worker's hands.
-- Run in a transaction that has locked the Graphile rows (lock-and-read or lock-job).
--
-- $1 bigint[]  Graphile job ids to cancel
-- $2 text      OJS id of the job that replaces them, or null
-- $3 boolean   fence: whether a running (locked) job may be cancelled
-- Steps: 1. label the ledger rows `cancelled` first, so the delete trigger leaves them alone;
--        2. delete the unlocked (or stale-locked) Graphile rows;
--        3. when $3, fence the running ones as Graphile's own replace does: attempts =
--           max_attempts and key = null, so the running attempt is never retried and its
--           success deletes a row that is already labelled.
-- Returns: one row per cancelled job: job_id (text), finished_at, fenced (boolean).
-- SQLSTATEs: none of its own. Running jobs are skipped (not cancelled) when $3 is false.
with target as (
  select l.job_id, j.id is not null and j.locked_at is not null and j.locked_at > now() - interval '4 hours' as running
  from :OJS_UNIQUE_SCHEMA.jobs l
  left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = l.job_id
  where l.job_id = any($1::bigint[]) and l.terminal_state is null
), labelled as (
  update :OJS_UNIQUE_SCHEMA.jobs l
  set terminal_state = 'cancelled', finished_at = clock_timestamp(), replaced_by = $2::text
  from target
  where l.job_id = target.job_id and (not target.running or $3::boolean)
  returning l.job_id, l.finished_at, target.running
), removed as (
  delete from :GRAPHILE_WORKER_SCHEMA._private_jobs j
  using labelled
  where j.id = labelled.job_id and not labelled.running
  returning j.id
), fenced as (
  update :GRAPHILE_WORKER_SCHEMA._private_jobs j
  set attempts = j.max_attempts, key = null, updated_at = now()
  from labelled
  where j.id = labelled.job_id and labelled.running
  returning j.id
)
-- `removed` and `fenced` run although nothing reads them: PostgreSQL executes every
-- data-modifying CTE exactly once.
select labelled.job_id::text, labelled.finished_at, labelled.running as fenced from labelled;
