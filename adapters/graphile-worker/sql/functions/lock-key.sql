-- lock_key: the wait of the lost-reply check (lock-key.sql): returns once no transaction holds,
-- or is inserting, the key's head record.
--
-- Parameters: p_fingerprint text (the uniqueness key).
-- Steps: 1. lock_head; 2. no record visible: a speculative insert of a placeholder head (a
--   negative job id, which Graphile never gives) waits on jobs_head_idx for a head an
--   uncommitted transaction is inserting, then does nothing (ON CONFLICT) or inserts.
-- Returns: void. Raises: as lock_head (55P03 under the caller's lock_timeout).
-- All-or-nothing: the caller runs it in a transaction it rolls back: the placeholder never stays.
-- Plans: generic plan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.lock_key(p_fingerprint text)
returns void language plpgsql volatile set plan_cache_mode = force_generic_plan as $$
begin
  -- lock-key.sql (the lost-reply check): waits for the transaction holding the key's lock.
  if not :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint) then
    -- No record visible: the lost transaction may be inserting the key's first record, its head,
    -- which no snapshot shows before it commits. A speculative insert of a head for the key
    -- waits on the unique index until that transaction ends (then does nothing). The check runs
    -- in a transaction it rolls back, so this placeholder never stays; its ids cannot collide
    -- with a job's (Graphile's ids are positive).
    insert into :OJS_UNIQUE_SCHEMA.jobs (job_id, ojs_id, fingerprint, type, queue, created_at, scheduled_at,
      max_attempts, priority, head)
    values (-1 - floor(random() * 9e18)::bigint, 'ojs-unique:lock-key:' || gen_random_uuid(), p_fingerprint, '', '',
      clock_timestamp(), clock_timestamp(), 0, 0, true)
    on conflict (fingerprint) where head do nothing;
  end if;
end
$$;
