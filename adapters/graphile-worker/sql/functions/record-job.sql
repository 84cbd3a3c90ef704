-- record_job: the ledger record of a job Graphile just added, and its policy's retention on the
-- key's `heads` row.
--
-- Parameters: p_job_id bigint (Graphile's id); p_identifier text (OJS type); p_ojs_id text (null:
--   Graphile's id); p_fingerprint text (null without a policy); p_queue text (OJS queue);
--   p_meta jsonb; p_policy jsonb (parsed; null without one); p_period interval (null without
--   one); p_scheduled_at timestamptz (Graphile's run_at); p_max_attempts int; p_ojs_priority int;
--   p_request_token uuid (find-request.sql); p_head boolean (insert the key's head record).
-- Steps: 0. (after step 1) a caller-chosen id a pending x_successor holds is taken (successors;
--           promote_successor deletes the row before it inserts);
--        1. insert the record: created_at = clock_timestamp(), expires_at = period_end from the
--           policy's anchor (x_period_anchor "scheduled_at": the due time; otherwise creation,
--           also for "last_duplicate", which touch_jobs moves on); as a head, ON CONFLICT DO
--           NOTHING on jobs_head_idx;
--        2. a head: refuse when the key has another record (only a head reclaimed meanwhile
--           hides one);
--        3. a policy counting a terminal state: fold its (state, period) entries into
--           heads.retention (merge_retention), so that reclaim keeps a finished record while any
--           policy used on the key can count it.
-- Returns: json {job_id, id, created_at, scheduled_at, max_attempts}; null, having written
--   nothing, when p_head and another head of the key came first.
-- Raises: 23505 on jobs_ojs_id_key (the OJS id is taken, also by a pending successor); 40001 for a record seen late (step 2).
-- All-or-nothing: inside its caller's statement; a raise undoes both writes.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.record_job(
  p_job_id bigint, p_identifier text, p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_scheduled_at timestamptz, p_max_attempts int, p_ojs_priority int,
  p_request_token uuid, p_head boolean
) returns json
-- plpgsql, not sql: a SQL-language function that cannot be inlined is planned again on every
-- call, which costs more than the insert itself. A function of its own, apart from insert_job,
-- so that add_job stays outside the plan clauses.
language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_now timestamptz := clock_timestamp();
  v_anchor timestamptz := case when p_policy ->> 'x_period_anchor' = 'scheduled_at' then p_scheduled_at else v_now end;
  v_row json;
begin
  -- Two statements, not one with a conditional ON CONFLICT: a plain insert is not speculative.
  if p_head then
    insert into :OJS_UNIQUE_SCHEMA.jobs as l (job_id, ojs_id, fingerprint, type, queue, meta, policy,
      created_at, expires_at, scheduled_at, max_attempts, priority, request_token, head)
    values (p_job_id, coalesce(p_ojs_id, p_job_id::text), p_fingerprint, p_identifier, p_queue, p_meta, p_policy,
      v_now,
      -- Measured from the policy's anchor (x_period_anchor): the due time, or creation (also for
      -- last_duplicate, which touch_jobs moves on).
      :OJS_UNIQUE_SCHEMA.period_end(v_anchor, p_period),
      p_scheduled_at, p_max_attempts, p_ojs_priority, p_request_token, p_head)
    on conflict (fingerprint) where head do nothing
    returning json_build_object('job_id', l.job_id::text, 'id', l.ojs_id, 'created_at', l.created_at,
      'scheduled_at', l.scheduled_at, 'max_attempts', l.max_attempts) into v_row;
    if v_row is null then
      return null;
    end if;
    -- Any other record of the key was inserted under a head this insert would have met; should
    -- one show up all the same (its head reclaimed meanwhile), refuse rather than keep two.
    perform 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint and l.job_id <> p_job_id;
    if found then
      raise exception using errcode = 'serialization_failure',
        message = 'ojs-unique: a concurrent enqueue of the same key was seen late';
    end if;
  else
    insert into :OJS_UNIQUE_SCHEMA.jobs as l (job_id, ojs_id, fingerprint, type, queue, meta, policy,
      created_at, expires_at, scheduled_at, max_attempts, priority, request_token)
    values (p_job_id, coalesce(p_ojs_id, p_job_id::text), p_fingerprint, p_identifier, p_queue, p_meta, p_policy,
      v_now, :OJS_UNIQUE_SCHEMA.period_end(v_anchor, p_period),
      p_scheduled_at, p_max_attempts, p_ojs_priority, p_request_token)
    returning json_build_object('job_id', l.job_id::text, 'id', l.ojs_id, 'created_at', l.created_at,
      'scheduled_at', l.scheduled_at, 'max_attempts', l.max_attempts) into v_row;
  end if;
  -- A chosen id a pending x_successor holds is taken (a plpgsql simple test without one:
  -- Graphile's ids are never reserved). After the insert: no unique index spans the two tables,
  -- so keep_successor leaves a record with the id in jobs_ojs_id_key (inserted and deleted in
  -- its transaction), on which this insert waited until it committed; its row is visible now.
  if p_ojs_id is not null and exists (select 1 from :OJS_UNIQUE_SCHEMA.successors s where s.ojs_id = p_ojs_id) then
    raise exception using errcode = 'unique_violation', constraint = 'jobs_ojs_id_key',
      message = 'ojs-unique: the id is a pending successor''s';
  end if;
  -- Retention: remember on the key's `heads` row every (terminal state, period) a policy used on
  -- the key checks, so reclaim keeps a finished record as long as ANY of them can still count it.
  -- Here rather than in an AFTER INSERT trigger: PostgreSQL rebuilds a trigger's WHEN clause from
  -- its stored text at the start of every inserting statement, a cost even when it is false. The
  -- test below is a plpgsql simple expression, so the usual policy (live states only) pays next
  -- to nothing.
  -- The key's lock is held (its head record), so no other enqueue of the key writes this row
  -- meanwhile; it is an upsert, not an update, as the `heads` row exists only once a policy
  -- needed it (or reclaim deleted an empty one), and it writes only when the policy adds
  -- something (`@>`).
  if p_fingerprint is not null and (p_policy -> 'states') ?| array['completed', 'cancelled', 'discarded'] then
    insert into :OJS_UNIQUE_SCHEMA.heads as h (fingerprint, retention)
    -- An entry is the period ("P1D"), prefixed with the policy's anchor when it has one
    -- ("scheduled_at P1D", "last_duplicate P1D"; retained_at reads both), or "forever".
    select p_fingerprint, jsonb_object_agg(s.state, jsonb_build_array(coalesce(
        (p_policy ->> 'x_period_anchor') || ' ' || (p_policy ->> 'period'), p_policy ->> 'period', 'forever')))
      from jsonb_array_elements_text(p_policy -> 'states') s(state)
      where s.state in ('completed', 'cancelled', 'discarded')
    on conflict (fingerprint) do update set retention = :OJS_UNIQUE_SCHEMA.merge_retention(h.retention, excluded.retention)
      where not h.retention @> excluded.retention;
  end if;
  return v_row;
end
$$;
