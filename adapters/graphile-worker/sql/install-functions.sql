-- install-functions: (re)creates the adapter's functions and the AFTER DELETE trigger on
-- Graphile Worker's jobs table. Run on every install (every `migrate()` through the preset's
-- postmigrate hook, and by the adapter's own start-up), so a Graphile migration that recreates
-- _private_jobs cannot leave the ledger blind.
--
-- Params: none. Placeholders (escaped before substitution):
--   :GRAPHILE_WORKER_SCHEMA        Graphile Worker's schema (identifier)
--   :OJS_UNIQUE_SCHEMA             the adapter's schema (identifier)
--   :GRAPHILE_WORKER_SCHEMA_NAME   the same, as a string literal (for the trigger's DDL)
--   :OJS_UNIQUE_SCHEMA_NAME        the adapter's schema (string literal), for the trigger name
-- Steps: 1. derived_state(): OJS state of a job from its ledger row and Graphile row.
--        2. lock_and_read(fingerprint, states): locks the key's head row, then reads candidates.
--        3. job_deleted(): trigger function recording completed/discarded/cancelled.
--        4. the trigger, created only when missing (creating it takes a table lock that would
--           stall running workers for a moment on every start).
-- Idempotent. Raises: 42P01 when Graphile Worker's schema is not migrated.
create or replace function :OJS_UNIQUE_SCHEMA.derived_state(
  terminal_state text, present boolean, locked_at timestamptz, attempts int, max_attempts int,
  run_at timestamptz, at timestamptz
) returns text language sql immutable as $$
  -- Research §3. The ledger's label wins (it is written by whoever ended the job); a row that
  -- vanished without a label can only have been completed while the trigger was missing.
  -- 4 hours is Graphile Worker's own stale-lock threshold (resetLockedAt).
  select case
    when terminal_state is not null then terminal_state
    when not present then 'completed'
    when locked_at is not null and locked_at > at - interval '4 hours' then 'active'
    when attempts >= max_attempts then 'discarded'
    when run_at > at and attempts > 0 then 'retryable'
    when run_at > at then 'scheduled'
    else 'available'
  end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.lock_and_read(p_fingerprint text, p_states text[])
returns json language plpgsql volatile as $$
declare
  v_now timestamptz;
  v_result json;
begin
  -- The per-key lock: every enqueue of this key upserts the same row, so the second waits here
  -- until the first commits or rolls back (research §6 B, measured strong in 50/50 rounds).
  -- pg_advisory_xact_lock was rejected: its 64-bit space needs the key hashed again, and it is
  -- invisible to anyone inspecting the database.
  insert into :OJS_UNIQUE_SCHEMA.heads as h (fingerprint) values (p_fingerprint)
    on conflict (fingerprint) do update set seq = h.seq + 1;
  -- Each statement below takes a fresh snapshot (READ COMMITTED, volatile function): it sees
  -- every enqueue that committed while we waited. Doing this read in the same statement as the
  -- upsert would miss them.
  --
  -- Lock the live candidates' Graphile rows: workers fetch with SKIP LOCKED, so none of them can
  -- start one of these jobs between this read and the caller's cancel.
  perform 1 from :GRAPHILE_WORKER_SCHEMA._private_jobs j
    where j.id in (select l.job_id from :OJS_UNIQUE_SCHEMA.jobs l
                   where l.fingerprint = p_fingerprint and l.terminal_state is null)
    order by j.id
    for update of j;
  v_now := clock_timestamp();
  select json_build_object(
    'now', floor(extract(epoch from v_now) * 1000),
    'candidates', coalesce(json_agg(json_build_object(
      'job_id', c.job_id::text, 'id', c.ojs_id, 'state', c.state,
      'created_at', c.created_ms, 'scheduled_at', c.scheduled_ms)), '[]'::json))
  into v_result
  from (
    select l.job_id, l.ojs_id,
      :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts,
        j.max_attempts, j.run_at, v_now) as state,
      floor(extract(epoch from l.created_at) * 1000) as created_ms,
      floor(extract(epoch from coalesce(j.run_at, l.scheduled_at)) * 1000) as scheduled_ms
    from :OJS_UNIQUE_SCHEMA.jobs l
    left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = l.job_id
    -- A terminal record whose state the new policy does not check can never be its duplicate;
    -- skipping it keeps a hot key's read small between reclaims. Live records are always read.
    where l.fingerprint = p_fingerprint
      and (l.terminal_state is null or l.terminal_state = any(p_states))
  ) c;
  return v_result;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.job_deleted() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
begin
  -- Must never raise: an error here aborts the worker's completion DELETE, which nothing awaits,
  -- so Node dies of an unhandled rejection and the job re-runs 4 hours later (research §4).
  -- Losing one label is the lesser harm: a vanished row without a label reads as completed.
  begin
    update :OJS_UNIQUE_SCHEMA.jobs set
      terminal_state = case
        when old.locked_at is not null then 'completed'        -- the worker deletes its own locked row on success
        when old.attempts >= old.max_attempts then 'discarded' -- permafail clean-up
        else 'cancelled'                                        -- remove_job / complete_jobs on a job that never ran
      end,
      finished_at = clock_timestamp(),
      final_attempts = old.attempts
    where job_id = old.id and terminal_state is null;
  exception when others then
    raise warning 'ojs-unique: could not record the end of job % (%: %)', old.id, sqlstate, sqlerrm;
  end;
  return null;
end
$$;

do $$
declare
  v_trigger text := left('ojs_unique_job_deleted_' || :OJS_UNIQUE_SCHEMA_NAME, 63);
  v_table regclass := format('%I._private_jobs', :GRAPHILE_WORKER_SCHEMA_NAME)::regclass;
begin
  if not exists (select 1 from pg_catalog.pg_trigger where tgrelid = v_table and tgname = v_trigger) then
    execute format('create trigger %I after delete on %s for each row execute function %I.job_deleted()',
      v_trigger, v_table, :OJS_UNIQUE_SCHEMA_NAME);
  end if;
end
$$;
