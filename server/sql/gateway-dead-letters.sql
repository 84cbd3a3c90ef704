-- gateway-dead-letters: a page of the OJS gateway's dead letters: the jobs Graphile keeps failed
-- for good (its permanently failed rows: attempts exhausted, not locked, as derived_state reads
-- `discarded`), the adapter's by their OJS id and queue, Graphile's own (added with addJob) by
-- their Graphile id and named queue (else 'default'), in the order they were added.
--
-- $1 text  OJS queue, or null for every queue
-- $2 int   at most this many ids
-- $3 int   skip this many first
-- Returns: one row: total (bigint, the dead letters in all), ids (text[], the page).
-- SQLSTATEs: none of its own. Reads only.
with dead as (
  select coalesce(l.ojs_id, j.id::text) as id, j.id as job_id
    from :GRAPHILE_WORKER_SCHEMA._private_jobs as j
    left join :OJS_UNIQUE_SCHEMA.jobs as l on l.job_id = j.id
    left join :GRAPHILE_WORKER_SCHEMA._private_job_queues as named on named.id = j.job_queue_id
   where j.attempts >= j.max_attempts
     and :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, true, j.locked_at, j.attempts, j.max_attempts, j.run_at,
           clock_timestamp()) = 'discarded'
     and ($1::text is null or coalesce(l.queue, named.queue_name, 'default') = $1::text)
)
select (select count(*) from dead) as total,
       array(select id from dead order by job_id limit $2::int offset $3::int) as ids;
