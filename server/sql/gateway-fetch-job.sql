-- gateway-fetch-job: claims the next due job of one OJS queue for an HTTP worker, with Graphile
-- Worker's own lock, as Graphile's get_job does it (getJobs.ts, named-queue strategy 2): the
-- row is chosen `for update skip locked` among `is_available` rows due by now, in Graphile's
-- order (priority, run_at), and claimed by setting attempts + 1, locked_by and locked_at; its
-- named queue, if any, is locked the same way. A Graphile runner never takes a row locked so,
-- and this never takes one a runner holds.
--
-- The gateway's own settings of the queue (gateway_queues) decide first: a paused queue gives
-- nothing; a rate-limited one gives nothing while its window's count is at the limit, and counts
-- the job it gives. A rate-limited queue's row is locked for the statement, so concurrent fetches
-- of it (from any gateway process) take turns and each sees the count the one before left.
--
-- $1 text   lock owner (the gateway's pool id, as Graphile's worker id)
-- $2 text   OJS queue: the ledger's queue for jobs the adapter added, else Graphile's queue
--           name, else 'default'
-- Returns: zero or one row: job_id (text, Graphile's id), ojs_id (the ledger's OJS id, or null
--          for a job added with Graphile's own addJob).
-- SQLSTATEs: none of its own. One statement: all-or-nothing.
with paused as (
  select 1 from :OJS_UNIQUE_SCHEMA.gateway_queues as g where g.name = $2::text and g.paused_at is not null
), rate as (
  select g.rate_max, g.rate_window_ms, g.window_start, g.window_count
    from :OJS_UNIQUE_SCHEMA.gateway_queues as g
   where g.name = $2::text and g.rate_max is not null
     for update
), j as (
  select jobs.job_queue_id, jobs.id
    from :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
    left join :OJS_UNIQUE_SCHEMA.jobs as l on l.job_id = jobs.id
    left join :GRAPHILE_WORKER_SCHEMA._private_job_queues as named on named.id = jobs.job_queue_id
   where not exists (select 1 from paused)
     and not exists (
       select 1 from rate
        where rate.window_start + rate.rate_window_ms * interval '1 millisecond' > now()
          and rate.window_count >= rate.rate_max
     )
     and jobs.is_available = true
     and jobs.run_at <= now()
     and coalesce(l.queue, named.queue_name, 'default') = $2::text
     and (
       jobs.job_queue_id is null
       or jobs.job_queue_id in (
         select id from :GRAPHILE_WORKER_SCHEMA._private_job_queues as job_queues
          where job_queues.is_available = true
          for update skip locked
       )
     )
   order by jobs.priority asc, jobs.run_at asc, jobs.id asc
   limit 1
   for update of jobs skip locked
), q as (
  update :GRAPHILE_WORKER_SCHEMA._private_job_queues as job_queues
     set locked_by = $1::text, locked_at = now()
    from j
   where job_queues.id = j.job_queue_id
), w as (
  -- A new window from this job when the last one ended (or none began), else one more in it.
  update :OJS_UNIQUE_SCHEMA.gateway_queues as g
     set window_start = case
           when g.window_start is null or g.window_start + g.rate_window_ms * interval '1 millisecond' <= now() then now()
           else g.window_start
         end,
         window_count = case
           when g.window_start is null or g.window_start + g.rate_window_ms * interval '1 millisecond' <= now() then 1
           else g.window_count + 1
         end
    from j
   where g.name = $2::text and g.rate_max is not null
)
update :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
   set attempts = jobs.attempts + 1, locked_by = $1::text, locked_at = now()
  from j
 where jobs.id = j.id
returning jobs.id::text as job_id, (select l.ojs_id from :OJS_UNIQUE_SCHEMA.jobs as l where l.job_id = jobs.id) as ojs_id;
