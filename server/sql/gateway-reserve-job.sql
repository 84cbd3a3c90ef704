-- gateway-reserve-job: reserves a job an HTTP worker holds for its visibility timeout (a fetch, a
-- heartbeat), in its gateway row (`gateway_jobs`, migration-0001-schema.sql): until now + $3 ms,
-- or its execution deadline $5 when that is sooner (server/job-reservation.ts), for the lock it
-- holds now (`locked_at`).
--
-- $1 text     OJS id
-- $2 bigint   Graphile job id
-- $3 float8   the visibility timeout, in ms
-- $4 text     lock owner (must hold the row)
-- $5 float8   the job's execution deadline, in ms since the epoch, or null for none
-- Returns: one row (reserved) when reserved; none when $4 does not hold the job.
-- SQLSTATEs: none of its own. One statement.
insert into :OJS_UNIQUE_SCHEMA.gateway_jobs as g (id, graphile_id, reserved_until, reserved_lock_at)
select $1::text, jobs.id,
       least(now() + $3::float8 * interval '1 millisecond', to_timestamp($5::float8 / 1000)),
       jobs.locked_at
  from :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
 where jobs.id = $2::bigint and jobs.locked_by = $4::text
on conflict (id) do update
  set graphile_id = excluded.graphile_id, reserved_until = excluded.reserved_until, reserved_lock_at = excluded.reserved_lock_at
returning true as reserved;
