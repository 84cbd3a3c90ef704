-- gateway-lapsed-reservations: takes the reservations whose visibility timeout passed
-- (`gateway_jobs`, migration-0001-schema.sql), the oldest first, and returns the jobs the gateway
-- still holds under the lock each reserved: the caller fails them back (gateway-fail-job.sql).
--
-- $1 text     lock owner
-- $2 integer  at most this many reservations
-- Steps: 1. Lapsed reservations, by gateway_jobs_reserved_idx, skipping rows another session
--           holds (another gateway process taking them, a fetch or heartbeat renewing them).
--        2. Clear them (each is taken once, by one process).
--        3. Of those, the jobs $1 still holds with the lock reserved (`locked_at` unchanged): a
--           job completed, failed or fetched again since is left alone.
-- Returns: rows (id: OJS id, job_id: Graphile id). SQLSTATEs: none of its own. One statement.
with lapsed as (
  select g.id
    from :OJS_UNIQUE_SCHEMA.gateway_jobs as g
   where g.reserved_until <= now()
   order by g.reserved_until
   limit $2::integer
     for update skip locked
), cleared as (
  update :OJS_UNIQUE_SCHEMA.gateway_jobs as g
     set reserved_until = null
    from lapsed
   where g.id = lapsed.id
  returning g.id, g.graphile_id, g.reserved_lock_at
)
select cleared.id, cleared.graphile_id::text as job_id
  from cleared
  join :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs on jobs.id = cleared.graphile_id
 where jobs.locked_by = $1::text and jobs.locked_at = cleared.reserved_lock_at;
