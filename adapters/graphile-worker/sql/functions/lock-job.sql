-- lock_job: locks one job for OJS CANCEL, Graphile's row before the ledger record (the lock
-- order), and reads its state under both locks.
--
-- Parameters: p_ojs_id text.
-- Returns: table (job_id text, state text): no row for an unknown id, else one.
-- Raises: 55P03 under the session's lock_timeout.
-- All-or-nothing: writes nothing.
create or replace function :OJS_UNIQUE_SCHEMA.lock_job(p_ojs_id text)
returns table (job_id text, state text) language plpgsql volatile as $$
#variable_conflict use_column
declare
  v_job_id bigint;
  v_terminal text;
  v_job record;
begin
  select l.job_id into v_job_id from :OJS_UNIQUE_SCHEMA.jobs l where l.ojs_id = p_ojs_id;
  if not found then
    return;
  end if;
  -- Graphile's row first, then the ledger row: the order in which a worker's completion DELETE
  -- and its trigger take them, so the two can never wait on each other in a cycle.
  select j.id, j.locked_at, j.attempts, j.max_attempts, j.run_at into v_job
    from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = v_job_id for update;
  select l.terminal_state into v_terminal from :OJS_UNIQUE_SCHEMA.jobs l where l.job_id = v_job_id for update;
  return query select v_job_id::text,
    :OJS_UNIQUE_SCHEMA.derived_state(v_terminal, v_job.id is not null, v_job.locked_at, v_job.attempts,
      v_job.max_attempts, v_job.run_at, clock_timestamp());
end
$$;
