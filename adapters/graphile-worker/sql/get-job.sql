-- get-job: the OJS envelope of one job the adapter enqueued, by OJS id.
--
-- $1 text   OJS id
-- Steps: read the ledger row, join Graphile's row when it still exists, derive the OJS state on
--        the database clock (derived_state).
-- Returns: zero or one row: job_id (text), id, type, queue, args (payload, null once Graphile
--          deleted the row), meta, policy, fingerprint, state, attempt, max_attempts, priority,
--          created_at, scheduled_at, completed_at, replaced_by, duplicate_count, last_duplicate_at
--          (duplicate_counts; null for none).
-- SQLSTATEs: none of its own.
select l.job_id::text, l.ojs_id as id, l.type, l.queue, j.payload as args, l.meta, l.policy,
  -- A released record (release-key) still reports the key it was enqueued under.
  coalesce(l.fingerprint, l.released_fingerprint) as fingerprint,
  :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts,
    j.max_attempts, j.run_at, clock_timestamp()) as state,
  coalesce(j.attempts, l.final_attempts, 0) as attempt,
  coalesce(j.max_attempts, l.max_attempts) as max_attempts,
  l.priority, l.created_at, coalesce(j.run_at, l.scheduled_at) as scheduled_at,
  l.finished_at as completed_at, l.replaced_by, c.duplicate_count, c.last_at as last_duplicate_at
from :OJS_UNIQUE_SCHEMA.jobs l
left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = l.job_id
left join :OJS_UNIQUE_SCHEMA.duplicate_counts c on c.job_id = l.job_id
where l.ojs_id = $1::text;
