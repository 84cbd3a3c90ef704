-- cancel_jobs: labels jobs cancelled and deletes or fences their Graphile rows; for a replace,
-- takes the key from every record it met.
--
-- Parameters: p_job_ids bigint[] (Graphile ids; for a replace, the candidates lock_and_read
--   locked); p_replaced_by text (the replacing job's OJS id; null for OJS CANCEL, which cancels
--   live jobs only); p_fence boolean (a running job is fenced, attempts = max_attempts and its
--   job key cleared; false: a running job is left as it is).
-- Steps: 1. each record's derived state (live or not) and whether it runs now;
--        2. label the live ones cancelled (replaced_by); for a replace, mark every one superseded
--           and move each but the key's head record off the key;
--        3. delete the Graphile rows of the cancelled jobs not running; 4. fence the running ones;
--        5. OJS CANCEL: promote the pending x_successor of a fenced job (promote_successor).
-- Returns: table (job_id text, finished_at timestamptz, fenced boolean): one row per record written.
-- Raises: nothing of its own.
-- All-or-nothing: one statement (data-modifying CTEs, each run exactly once).
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.cancel_jobs(p_job_ids bigint[], p_replaced_by text, p_fence boolean)
returns table (job_id text, finished_at timestamptz, fenced boolean)
-- A function, not a statement of its own, so that replace_jobs runs it in the same round trip as
-- the insert.
language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
#variable_conflict use_column
begin
  return query
  -- A replace (p_replaced_by) supersedes every duplicate it met: a live one is labelled cancelled
  -- by the replacing job; a record that is already terminal (a policy checking
  -- completed/cancelled/discarded counts it) keeps its label, result and times, since a terminal
  -- state is never left. Each is marked superseded (released_fingerprint; candidates() says so,
  -- and the core never counts it while it is finished) and leaves the key (fingerprint null, as
  -- release_key does), so no later read of the key even scans it: the work of an enqueue never
  -- grows with the key's replaced history. All but the key's head record: it stays the key's
  -- lock (lock_head), so a replace never moves the lock, and costs a later read one row. Without a replacement (OJS CANCEL) only
  -- live jobs are cancelled, and they keep their key. One UPDATE per record: a row must not be
  -- updated twice in one statement.
  with target as (
    -- Live by the derived state: a job Graphile keeps after its last attempt failed is
    -- `discarded` (terminal) although its record has no label yet.
    select l.job_id,
      :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts, j.max_attempts,
        j.run_at, now()) not in ('completed', 'cancelled', 'discarded') as live,
      l.terminal_state is null and j.id is not null and j.locked_at is not null and j.locked_at > now() - interval '4 hours' as running
    from :OJS_UNIQUE_SCHEMA.jobs l
    left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = l.job_id
    where l.job_id = any(p_job_ids) and (l.terminal_state is null or p_replaced_by is not null)
  ), labelled as (
    update :OJS_UNIQUE_SCHEMA.jobs l
    set terminal_state = case when target.live then 'cancelled' else l.terminal_state end,
      finished_at = case when target.live then clock_timestamp() else l.finished_at end,
      replaced_by = case when target.live then p_replaced_by else l.replaced_by end,
      released_fingerprint = case when p_replaced_by is not null then l.fingerprint else l.released_fingerprint end,
      fingerprint = case when p_replaced_by is not null and l.head is not true then null else l.fingerprint end
    from target
    where l.job_id = target.job_id and (not target.running or p_fence)
    returning l.job_id, l.finished_at, target.running, target.live
  ), removed as (
    delete from :GRAPHILE_WORKER_SCHEMA._private_jobs j
    using labelled
    where j.id = labelled.job_id and labelled.live and not labelled.running
    returning j.id
  ), fenced as (
    update :GRAPHILE_WORKER_SCHEMA._private_jobs j
    set attempts = j.max_attempts, key = null, updated_at = now()
    from labelled
    where j.id = labelled.job_id and labelled.live and labelled.running
    returning j.id
  )
  -- `removed` and `fenced` run although nothing reads them: PostgreSQL executes every
  -- data-modifying CTE exactly once.
  select labelled.job_id::text, labelled.finished_at, labelled.running as fenced from labelled;
  -- x_successor: an OJS CANCEL ends the job now, so its key's pending successor becomes a job now
  -- (as on memory). A deleted row's trigger (job_deleted) already promoted it; a fenced running
  -- one keeps its row until its attempt ends, so it is promoted here. A replace dropped the key's
  -- successor before cancelling (replace_jobs).
  if p_replaced_by is null then
    perform :OJS_UNIQUE_SCHEMA.promote_successor(s.holder_job_id)
      from :OJS_UNIQUE_SCHEMA.successors s join :OJS_UNIQUE_SCHEMA.jobs l on l.job_id = s.holder_job_id
      where s.holder_job_id = any(p_job_ids) and l.terminal_state = 'cancelled';
  end if;
end
$$;
