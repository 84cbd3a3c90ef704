-- candidates: every job recorded under a key that a policy may count, with its derived state
-- and OJS envelope, as the core's decideConflict reads candidates.
--
-- Parameters: p_fingerprint text (the uniqueness key); p_states text[] (the policy's states: a
--   terminal record is read only when its state is among them, a live one always);
--   p_now timestamptz (the moment states are derived at).
-- Steps: 1. a key with no record at all: null, from one index probe;
--        2. otherwise one index branch per state on (fingerprint, terminal_state), each record's
--           Graphile row fetched by primary key, aggregated in job id (insertion) order.
-- Returns: json: null (no record at all), else an array of {job_id, id, state, created_at,
--   scheduled_at, last_duplicate_at (epoch ms, database clock), superseded, view (the OJS
--   envelope)}, '[]' when none of the key's records is read.
-- Raises: nothing of its own. All-or-nothing: reads only (stable).
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.candidates(p_fingerprint text, p_states text[], p_now timestamptz)
-- plpgsql for its cached plan: a SQL-language function called from plpgsql is planned anew on
-- every call.
returns json language plpgsql stable set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
begin
  -- A key with no record at all: one index probe answers, instead of the four-branch read below,
  -- and says so with null rather than '[]' (none the policy counts), so that try_enqueue can
  -- insert the key's head record straight away.
  if not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint) then
    return null;
  end if;
  -- Every job recorded under the key, with its derived state, the numbers decideConflict needs
  -- (ms on the database clock) and its OJS envelope (so `ignore` answers without another query).
  -- Ordered by job id (insertion order).
  return (select coalesce(json_agg(json_build_object(
    'job_id', l.job_id::text, 'id', l.ojs_id,
    'state', :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts,
      j.max_attempts, j.run_at, p_now),
    'created_at', floor(extract(epoch from l.created_at) * 1000),
    'scheduled_at', floor(extract(epoch from coalesce(j.run_at, l.scheduled_at)) * 1000),
    'last_duplicate_at', floor(extract(epoch from l.last_duplicate_at) * 1000),
    -- A replace took the key from it (cancel_jobs): the core never counts it once it is finished.
    -- Only the key's head record can be read so; the others left the key.
    'superseded', l.released_fingerprint is not null,
    'view', json_build_object(
      'type', l.type, 'queue', l.queue, 'args', j.payload, 'meta', l.meta, 'policy', l.policy,
      'fingerprint', l.fingerprint, 'attempt', coalesce(j.attempts, l.final_attempts, 0),
      'max_attempts', coalesce(j.max_attempts, l.max_attempts), 'priority', l.priority,
      'created_at', l.created_at, 'scheduled_at', coalesce(j.run_at, l.scheduled_at),
      'completed_at', l.finished_at, 'replaced_by', l.replaced_by)) order by l.job_id), '[]'::json)
  -- A terminal record whose state the new policy does not check can never be its duplicate;
  -- skipping it keeps a hot key's read small between reclaims. Live records are always read.
  -- One branch per state, so that each is an index condition on (fingerprint, terminal_state)
  -- (jobs_fingerprint_state_idx) and a terminal state the policy does not check is a one-time filter that
  -- skips its branch: written as one OR, or with `terminal_state = any(p_states)` (which the
  -- planner kept as a filter), every record of the key was fetched and then discarded, and a key
  -- replaced n times read its n cancelled records on every enqueue.
  from (select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state is null
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'completed' and 'completed' = any(p_states)
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'cancelled' and 'cancelled' = any(p_states)
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'discarded' and 'discarded' = any(p_states)
) l
  -- Each record's Graphile row by primary key, one probe per record, whatever the statistics.
  -- A plain LEFT JOIN leaves the generic plan free to pick a merge join that walks
  -- _private_jobs' primary key from its start, which on a key with many records in a large jobs
  -- table costs far more than the probes. LIMIT 1, a no-op on a primary key, keeps the planner
  -- from flattening the subquery back into such a join. On a key with one record it costs the
  -- same as the join.
  left join lateral (select * from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = l.job_id limit 1) j on true);
end
$$;
