-- gateway-fail-job: an HTTP worker's NACK (or an expired reservation), as Graphile's failJobs:
-- records the error, unlocks the row and its named queue, and schedules the retry; a permanent
-- failure sets attempts to max_attempts, as Graphile's permanentlyFailJobs, so the job is
-- discarded.
--
-- $1 bigint   Graphile job id
-- $2 text     lock owner (must hold the row)
-- $3 text     error message (Graphile's last_error)
-- $4 boolean  permanent: no retry
-- $5 float8   retry delay in ms from the job's OJS retry policy, or null for Graphile's own
--             backoff (exp(least(attempts, 10)) seconds)
-- Returns: one row (job_id) when the job was failed; none when $2 does not hold it.
-- SQLSTATEs: none of its own. One statement: all-or-nothing.
with j as (
  update :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
     set last_error = $3::text,
         attempts = case when $4::boolean then greatest(jobs.attempts, jobs.max_attempts) else jobs.attempts end,
         run_at = case
           when $5::float8 is null then greatest(now(), jobs.run_at) + (exp(least(jobs.attempts, 10)) * interval '1 second')
           else now() + ($5::float8 * interval '1 millisecond')
         end,
         locked_by = null,
         locked_at = null
   where jobs.id = $1::bigint and jobs.locked_by = $2::text
  returning jobs.id, jobs.job_queue_id
), q as (
  update :GRAPHILE_WORKER_SCHEMA._private_job_queues as job_queues
     set locked_by = null, locked_at = null
    from j
   where job_queues.id = j.job_queue_id and job_queues.locked_by = $2::text
)
select id::text as job_id from j;
