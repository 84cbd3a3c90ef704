-- gateway-touch-lock: an HTTP worker's heartbeat: renews the lock it holds (locked_at = now()),
-- so Graphile's stale-lock recovery never takes the job back while the worker is alive.
--
-- $1 bigint  Graphile job id
-- $2 text    lock owner (must hold the row)
-- Returns: one row (job_id) when the lock was renewed; none when $2 does not hold it.
-- SQLSTATEs: none of its own.
update :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
   set locked_at = now()
 where jobs.id = $1::bigint and jobs.locked_by = $2::text
returning jobs.id::text as job_id;
