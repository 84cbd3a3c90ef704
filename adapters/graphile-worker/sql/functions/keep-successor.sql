-- keep_successor: x_successor: keeps an add as its key's one pending successor, replacing any
-- earlier one (docs/design/successor.md). Run after lock_and_read, which holds the holder's
-- Graphile row, so its finish (whose trigger promotes the successor) waits for this commit.
--
-- Parameters: p_holder bigint (the running job's Graphile id), then insert_job's p_identifier …
--   p_ojs_priority (p_ojs_id never null: the caller chose it, or Node did), p_request_token uuid.
-- Steps: 1. refuse an id a job holds; wait for a job another transaction is inserting with it,
--   and refuse it if that commits (a record with the id, inserted and deleted; record_job
--   refuses the other way round);
--   2. upsert the key's row: the latest add, its id and holder, replace the earlier one.
-- Returns: json {id, xid} (xid: the transaction's id, txid_current() as text, by which a lost
--   COMMIT reply is settled: transaction-status.sql).
-- Raises: 23505 on jobs_ojs_id_key (a job has the id), on successors_ojs_id_key (another key's
--   pending successor has it).
-- All-or-nothing: one statement.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.keep_successor(
  p_holder bigint, p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_placeholder bigint;
begin
  -- A job that holds the id: refused at once (the insert below would also wait for whoever is
  -- updating that job, a completion say).
  if exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.ojs_id = p_ojs_id) then
    raise exception using errcode = 'unique_violation', constraint = 'jobs_ojs_id_key',
      message = 'ojs-unique: the successor''s id names a job';
  end if;
  -- No unique index spans jobs and successors. A record with the id, inserted speculatively,
  -- waits on jobs_ojs_id_key for a job another transaction is inserting with it; deleted at once,
  -- its index entry makes such an insert after it wait for this commit, after which record_job
  -- sees this row. Its job id, minus this transaction's, is no Graphile id (those are positive);
  -- no reader sees it (deleted before commit); a batch's next one reuses it (no conflict with a
  -- row this transaction deleted).
  insert into :OJS_UNIQUE_SCHEMA.jobs (job_id, ojs_id, type, queue, created_at, scheduled_at, max_attempts, priority)
  values (-txid_current(), p_ojs_id, '', '', clock_timestamp(), clock_timestamp(), 0, 0)
  on conflict (ojs_id) do nothing
  returning job_id into v_placeholder;
  if v_placeholder is null then
    raise exception using errcode = 'unique_violation', constraint = 'jobs_ojs_id_key',
      message = 'ojs-unique: the successor''s id names a job';
  end if;
  delete from :OJS_UNIQUE_SCHEMA.jobs l where l.job_id = v_placeholder;
  insert into :OJS_UNIQUE_SCHEMA.successors as s (fingerprint, holder_job_id, ojs_id, identifier, payload,
    queue_name, run_at, max_attempts, priority, flags, queue, meta, policy, period, ojs_priority,
    request_token, created_at)
  values (p_fingerprint, p_holder, p_ojs_id, p_identifier, p_payload, p_queue_name, p_run_at, p_max_attempts,
    p_priority, p_flags, p_queue, p_meta, p_policy, p_period, p_ojs_priority, p_request_token, clock_timestamp())
  on conflict (fingerprint) do update set holder_job_id = excluded.holder_job_id, ojs_id = excluded.ojs_id,
    identifier = excluded.identifier, payload = excluded.payload, queue_name = excluded.queue_name,
    run_at = excluded.run_at, max_attempts = excluded.max_attempts, priority = excluded.priority,
    flags = excluded.flags, queue = excluded.queue, meta = excluded.meta, policy = excluded.policy,
    period = excluded.period, ojs_priority = excluded.ojs_priority, request_token = excluded.request_token,
    created_at = excluded.created_at;
  return json_build_object('id', p_ojs_id, 'xid', txid_current()::text);
end
$$;
