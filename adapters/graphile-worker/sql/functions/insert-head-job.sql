-- insert_head_job: insert_job for a key with no record: the new record is the key's head, and
-- its insert the key's lock.
--
-- Parameters: as insert_job.
-- Steps: 1. add_job with job_key => null; 2. record_job as the head; 3. another enqueue's head of
--   the key came first (record_job waited for it to commit, then returned null): delete the row
--   add_job just added, by primary key.
-- Returns: json, record_job's; null when another head came first (nothing written stays): the
--   caller locks that one instead.
-- Raises: as insert_job.
-- All-or-nothing: one statement; step 3 removes the one row nobody else has seen.
-- Plans: no SET clause (add_job: docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.insert_head_job(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json
language plpgsql volatile as $$
declare
  v_job :GRAPHILE_WORKER_SCHEMA._private_jobs;
  v_row json;
begin
  v_job := :GRAPHILE_WORKER_SCHEMA.add_job(
    identifier => p_identifier, payload => p_payload, queue_name => p_queue_name, run_at => p_run_at,
    max_attempts => p_max_attempts, job_key => null, priority => p_priority, flags => p_flags);
  v_row := :OJS_UNIQUE_SCHEMA.record_job(v_job.id, p_identifier, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy,
    p_period, v_job.run_at, v_job.max_attempts, p_ojs_priority, p_request_token, true);
  if v_row is null then
    -- The job Graphile just added in this statement, by primary key; nobody else has seen it.
    -- Rarer than a subtransaction around the insert would be costly (one on every first job).
    delete from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = v_job.id;
  end if;
  return v_row;
end
$$;
