-- release_key: releases a key (releaseUniqueKey): every record of it stops counting.
--
-- Parameters: p_fingerprint text (the uniqueness key).
-- Steps: 1. no record: 0, no lock taken; 2. the key's lock, in the lock order (lock_and_read);
--   3. move every record's fingerprint to released_fingerprint (head cleared): the next enqueue
--   finds no record and inserts a new head; 4. delete the key's `heads` row (its retention served
--   those records only), and its pending x_successor (it would add a job to the key no enqueue
--   decided on). The jobs themselves are untouched.
-- Returns: int, the records released.
-- Raises: 40001 when reclaim removed the key's records between 1 and 2 (run it again).
-- All-or-nothing: one statement.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.release_key(p_fingerprint text)
returns int language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_released int;
begin
  -- Nothing recorded under the key: nothing to release (and no lock to take).
  if not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint) then
    return 0;
  end if;
  -- The key's lock, in the lock order (Graphile rows of its live jobs, then its head record), so
  -- that no enqueue of the key is between its read and its write meanwhile. Raises 40001 when
  -- reclaim removed the key's records in between: the caller runs the transaction again.
  perform :OJS_UNIQUE_SCHEMA.lock_and_read(p_fingerprint, '{}'::text[]);
  -- Every record of the key, live or finished, leaves it: the next enqueue finds no record and
  -- inserts (its record becoming the key's new head). The jobs themselves are untouched: a live
  -- one runs as it would have, under no key.
  update :OJS_UNIQUE_SCHEMA.jobs l
  set released_fingerprint = l.fingerprint, fingerprint = null, head = null
  where l.fingerprint = p_fingerprint;
  get diagnostics v_released = row_count;
  -- Its retention memory served those records only.
  delete from :OJS_UNIQUE_SCHEMA.heads h where h.fingerprint = p_fingerprint;
  delete from :OJS_UNIQUE_SCHEMA.successors s where s.fingerprint = p_fingerprint;
  return v_released;
end
$$;
