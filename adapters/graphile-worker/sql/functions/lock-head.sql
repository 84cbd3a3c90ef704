-- lock_head: takes the key's lock, its head record (jobs.head; jobs_head_idx allows one per
-- key), until the caller's transaction ends.
--
-- Parameters: p_fingerprint text (the uniqueness key).
-- Steps: 1. lock the head record FOR UPDATE, waiting for its holder;
--        2. no head: promote the key's oldest record (a key keeps records without a head when its
--           head was reclaimed first); its entry in jobs_head_idx conflicts with a head a
--           concurrent enqueue created meanwhile, and the loop looks again;
--        3. no record at all: return false, holding nothing.
-- Returns: boolean: true with the lock held; false when the key has no record (the caller's
--   insert of a head record is then the lock).
-- Raises: 40001 when a concurrent head won under REPEATABLE READ (its snapshot would never show
--   it); 55P03 under the session's lock_timeout.
-- All-or-nothing: its one write, the promotion, is an UPDATE in a block that a unique violation
--   rolls back.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint text)
returns boolean language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_job_id bigint;
begin
  -- The per-key lock: the key's head record, locked until the transaction ends. Returns false,
  -- holding nothing, when the key has no record at all: the caller's own insert of a head record
  -- is then the lock (jobs_head_idx makes a concurrent one wait, then conflict).
  -- pg_advisory_xact_lock was rejected: under REPEATABLE READ a caller's snapshot predates the
  -- lock and would miss the winner's job, whereas a row lock then fails with 40001.
  loop
    perform 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint and l.head for update;
    if found then
      return true;
    end if;
    -- No head record: promote the key's oldest record. Its index entry in jobs_head_idx
    -- conflicts with any head a concurrent enqueue inserted or promoted meanwhile (waiting for
    -- it to commit first); then look again and lock that one.
    select min(l.job_id) into v_job_id from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint;
    if v_job_id is null then
      return false;
    end if;
    begin
      -- Still the key's: a replace that held the lock may have taken the key from this record
      -- (cancel_jobs) while we waited for its row; then look again.
      update :OJS_UNIQUE_SCHEMA.jobs l set head = true where l.job_id = v_job_id and l.fingerprint = p_fingerprint;
      if found then
        return true;
      end if;
    exception when unique_violation then
      -- Under REPEATABLE READ the snapshot would never show the winner's head: retry the transaction.
      if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'serialization_failure',
          message = 'ojs-unique: a concurrent enqueue of the same key took its lock first';
      end if;
    end;
  end loop;
end
$$;
