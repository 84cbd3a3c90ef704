-- gateway-read-graphile-job: the OJS view of a job added with Graphile's own addJob (no ledger
-- row), by Graphile id, while Graphile holds its row: its OJS queue is its named queue or
-- 'default', its state derived as for the adapter's jobs.
--
-- $1 bigint  Graphile job id
-- Returns: zero or one row: job_id, type, queue, args, state, attempt, max_attempts, priority
--          (Graphile's), created_at, scheduled_at, locked_by, last_error.
-- SQLSTATEs: none of its own.
select jobs.id::text as job_id, tasks.identifier as type, coalesce(named.queue_name, 'default') as queue,
  jobs.payload as args,
  :OJS_UNIQUE_SCHEMA.derived_state(null, true, jobs.locked_at, jobs.attempts, jobs.max_attempts, jobs.run_at,
    clock_timestamp()) as state,
  jobs.attempts as attempt, jobs.max_attempts, jobs.priority, jobs.created_at, jobs.run_at as scheduled_at,
  jobs.locked_by, jobs.last_error
from :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
join :GRAPHILE_WORKER_SCHEMA._private_tasks as tasks on tasks.id = jobs.task_id
left join :GRAPHILE_WORKER_SCHEMA._private_job_queues as named on named.id = jobs.job_queue_id
where jobs.id = $1::bigint
  and not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs as l where l.job_id = jobs.id);
