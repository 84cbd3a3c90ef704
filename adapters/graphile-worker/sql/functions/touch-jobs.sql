-- touch_jobs: records a duplicate attempt on the jobs an enqueue met (x_period_anchor
-- "last_duplicate": their windows are measured from it).
--
-- Parameters: p_job_ids bigint[] (Graphile ids, under the key's lock); p_period interval (the
--   policy's period).
-- Steps: last_duplicate_at = clock_timestamp(); expires_at moved to at least period_end(now).
-- Returns: void. Raises: nothing of its own.
-- All-or-nothing: one UPDATE.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.touch_jobs(p_job_ids bigint[], p_period interval)
returns void language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_now timestamptz := clock_timestamp();
begin
  -- Under the key's lock, with the live candidates' Graphile rows locked first (lock_and_read):
  -- the lock order holds, and no completion trigger writes these records meanwhile.
  update :OJS_UNIQUE_SCHEMA.jobs l
  set last_duplicate_at = v_now,
      expires_at = greatest(l.expires_at, :OJS_UNIQUE_SCHEMA.period_end(v_now, p_period))
  where l.job_id = any(p_job_ids);
end
$$;
