-- replace_jobs: the write half of a replace in one round trip: insert_job, then cancel_jobs
-- naming the new job.
--
-- Parameters: insert_job's p_identifier … p_ojs_priority, then p_cancel bigint[] (the locked
--   candidates to cancel), p_fence boolean (as cancel_jobs), p_request_token uuid.
-- Steps: 0. drop the key's pending x_successor (the new job carries the latest add; kept, it
--   would make a second live job once its holder finished, and cancel_jobs' delete would add it);
--   1. insert_job (first: the cancelled records name their replacement's id, Graphile's
--   unless the caller chose one); 2. cancel_jobs(p_cancel, the new OJS id, p_fence).
-- Returns: json {inserted: insert_job's result, cancelled: [cancel_jobs' rows]}.
-- Raises: as insert_job and cancel_jobs.
-- All-or-nothing: one statement: no reader sees the new job beside a job it replaced, or neither.
-- Plans: no SET clause (add_job: docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.replace_jobs(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_cancel bigint[], p_fence boolean,
  p_request_token uuid
) returns json
language plpgsql volatile as $$
declare
  v_job json;
begin
  delete from :OJS_UNIQUE_SCHEMA.successors s where s.fingerprint = p_fingerprint;
  v_job := :OJS_UNIQUE_SCHEMA.insert_job(p_identifier, p_payload, p_queue_name, p_run_at, p_max_attempts,
    p_priority, p_flags, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy, p_period, p_ojs_priority, p_request_token);
  return json_build_object('inserted', v_job, 'cancelled',
    (select coalesce(json_agg(c), '[]'::json)
     from :OJS_UNIQUE_SCHEMA.cancel_jobs(p_cancel, v_job ->> 'id', p_fence) c));
end
$$;
