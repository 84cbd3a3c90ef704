-- insert_job: adds a job through Graphile Worker's own add_job and records it (record_job), in
-- one statement.
--
-- Parameters: insert-job.sql's $1..$15: p_identifier text, p_payload json, p_queue_name text,
--   p_run_at timestamptz, p_max_attempts int, p_priority int (Graphile's), p_flags text[],
--   p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb, p_policy jsonb,
--   p_period interval, p_ojs_priority int, p_request_token uuid.
-- Steps: 1. add_job with job_key => null; 2. record_job (not as a head).
-- Returns: json, record_job's.
-- Raises: as record_job; add_job's own (22003: priority or max_attempts beyond a smallint).
-- All-or-nothing: one statement: a raise in record_job undoes add_job's row.
-- Plans: no SET clause: add_job plans under the session's setting, as under plain addJob
--   (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.insert_job(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json
-- Both statements are plpgsql "simple expressions" (no FROM), evaluated without a plan per call.
language plpgsql volatile as $$
declare
  v_job :GRAPHILE_WORKER_SCHEMA._private_jobs;
begin
  -- job_key => null: the adapter never takes a job key, so Graphile's key-replace path, and its
  -- race between two adds of one key that can drop the job, are never entered.
  v_job := :GRAPHILE_WORKER_SCHEMA.add_job(
    identifier => p_identifier, payload => p_payload, queue_name => p_queue_name, run_at => p_run_at,
    max_attempts => p_max_attempts, job_key => null, priority => p_priority, flags => p_flags);
  return :OJS_UNIQUE_SCHEMA.record_job(v_job.id, p_identifier, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy,
    p_period, v_job.run_at, v_job.max_attempts, p_ojs_priority, p_request_token, false);
end
$$;
