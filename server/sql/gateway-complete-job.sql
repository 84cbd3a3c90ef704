-- gateway-complete-job: an HTTP worker's ACK, as Graphile's completeJobs: deletes the row it
-- holds (the adapter's delete trigger records `completed` in the ledger) and unlocks its named
-- queue.
--
-- $1 bigint  Graphile job id
-- $2 text    lock owner (must hold the row)
-- Returns: one row (job_id) when the job was completed; none when $2 does not hold it.
-- SQLSTATEs: none of its own. One statement: all-or-nothing.
with j as (
  delete from :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
   where jobs.id = $1::bigint and jobs.locked_by = $2::text
  returning jobs.id, jobs.job_queue_id
), q as (
  update :GRAPHILE_WORKER_SCHEMA._private_job_queues as job_queues
     set locked_by = null, locked_at = null
    from j
   where job_queues.id = j.job_queue_id and job_queues.locked_by = $2::text
)
select id::text as job_id from j;
