-- update_job: copies a new job's fields onto an existing one in place (x_update).
--
-- Parameters: p_job_id bigint (Graphile's id; lock_and_read holds its row); p_fields text[] (the
--   policy's x_update fields: args, meta, priority, max_attempts, scheduled_at); p_payload json;
--   p_meta jsonb; p_ojs_priority int; p_priority int (Graphile's; null: 0); p_max_attempts int
--   (null: 25); p_run_at timestamptz (null: now()), the new job's values as add_job would fill them.
-- Steps: 1. lock Graphile's row, then the ledger record (the lock order); 2. compare each field
--   (times to the millisecond, as OJS reads them); 3. none differs: return; 4. write Graphile's
--   row (revision + 1) and the record, moving expires_at with the due time of a policy anchored
--   at scheduled_at. Run state (locked_at, locked_by, attempts, last_error) is never written.
-- Returns: json {changed: [field, …]} ([] when nothing differs).
-- Raises: P0002 (no_data_found) when the job has no Graphile row.
-- All-or-nothing: one statement.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.update_job(
  p_job_id bigint, p_fields text[], p_payload json, p_meta jsonb, p_ojs_priority int, p_priority int,
  p_max_attempts int, p_run_at timestamptz
) returns json language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_job record;
  v_rec record;
  v_priority int := coalesce(p_priority, 0);
  -- The new job's defaults, as Graphile's add_job fills them.
  v_max_attempts int := coalesce(p_max_attempts, 25);
  v_run_at timestamptz := coalesce(p_run_at, now());
  v_changed text[] := '{}';
  v_field text;
begin
  -- Graphile's row, then the ledger's: the lock order (lock_and_read already holds the first).
  select j.payload, j.priority, j.max_attempts, j.run_at into v_job
    from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = p_job_id for update;
  if not found then
    raise exception using errcode = 'no_data_found', message = 'ojs-unique: the job to update has no Graphile row';
  end if;
  select l.meta, l.priority, l.policy into v_rec from :OJS_UNIQUE_SCHEMA.jobs l where l.job_id = p_job_id for update;
  foreach v_field in array p_fields loop
    if (v_field = 'args' and v_job.payload::jsonb is distinct from p_payload::jsonb)
       or (v_field = 'meta' and v_rec.meta is distinct from p_meta)
       or (v_field = 'priority' and (v_rec.priority <> p_ojs_priority or v_job.priority <> v_priority))
       or (v_field = 'max_attempts' and v_job.max_attempts <> v_max_attempts)
       -- In milliseconds, as OJS (and candidates()) read times: Graphile's now() has microseconds.
       or (v_field = 'scheduled_at'
           and floor(extract(epoch from v_job.run_at) * 1000) <> floor(extract(epoch from v_run_at) * 1000)) then
      v_changed := v_changed || v_field;
    end if;
  end loop;
  if cardinality(v_changed) = 0 then
    return json_build_object('changed', '[]'::json);
  end if;
  -- Run state (locked_at, locked_by, attempts, last_error) is never written: a running attempt
  -- goes on as it started and reads the new values only if it runs again.
  update :GRAPHILE_WORKER_SCHEMA._private_jobs j set
    payload = case when 'args' = any(v_changed) then p_payload else j.payload end,
    priority = case when 'priority' = any(v_changed) then v_priority else j.priority end,
    max_attempts = case when 'max_attempts' = any(v_changed) then v_max_attempts else j.max_attempts end,
    run_at = case when 'scheduled_at' = any(v_changed) then v_run_at else j.run_at end,
    revision = j.revision + 1,
    updated_at = now()
  where j.id = p_job_id;
  update :OJS_UNIQUE_SCHEMA.jobs l set
    meta = case when 'meta' = any(v_changed) then p_meta else l.meta end,
    priority = case when 'priority' = any(v_changed) then p_ojs_priority else l.priority end,
    max_attempts = case when 'max_attempts' = any(v_changed) then v_max_attempts else l.max_attempts end,
    scheduled_at = case when 'scheduled_at' = any(v_changed) then v_run_at else l.scheduled_at end,
    expires_at = case
      when 'scheduled_at' = any(v_changed) and l.policy ->> 'x_period_anchor' = 'scheduled_at'
        then :OJS_UNIQUE_SCHEMA.period_end(v_run_at, (l.policy ->> 'period')::interval)
      else l.expires_at end
  where l.job_id = p_job_id;
  return json_build_object('changed', to_json(v_changed));
end
$$;
