-- gateway-retry-dead-letter: OJS's manual retry of a dead letter (discarded -> available), as
-- Graphile's own reschedule_jobs(ids, run_at => now(), attempts => 0) does, but only while the
-- row is still failed for good: attempts exhausted and not locked (or its lock stale past
-- Graphile's four hours, as reschedule_jobs and derived_state read it).
--
-- $1 bigint  Graphile job id
-- Returns: one row (job_id) when the job was rescheduled; none when it is not a dead letter.
-- SQLSTATEs: none of its own. One statement.
update :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
   set attempts = 0, run_at = now(), updated_at = now()
 where jobs.id = $1::bigint
   and jobs.attempts >= jobs.max_attempts
   and (jobs.locked_at is null or jobs.locked_at < now() - interval '4 hours')
returning jobs.id::text as job_id;
