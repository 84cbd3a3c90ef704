-- gateway-queue-stats: how many jobs of one OJS queue are in each OJS state: the jobs the
-- adapter recorded (ledger, state derived as get-job.sql does) and, while Graphile holds
-- them, the jobs added with Graphile's own addJob (queue: their named queue, else 'default').
--
-- $1 text  OJS queue
-- Returns: rows (state text, count bigint). SQLSTATEs: none of its own.
select state, count(*) from (
  select :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts, j.max_attempts,
    j.run_at, clock_timestamp()) as state
    from :OJS_UNIQUE_SCHEMA.jobs as l
    left join :GRAPHILE_WORKER_SCHEMA._private_jobs as j on j.id = l.job_id
   where l.queue = $1::text
  union all
  select :OJS_UNIQUE_SCHEMA.derived_state(null, true, j.locked_at, j.attempts, j.max_attempts, j.run_at, clock_timestamp())
    from :GRAPHILE_WORKER_SCHEMA._private_jobs as j
    left join :GRAPHILE_WORKER_SCHEMA._private_job_queues as named on named.id = j.job_queue_id
   where coalesce(named.queue_name, 'default') = $1::text
     and not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs as l where l.job_id = j.id)
) as states
group by state;
