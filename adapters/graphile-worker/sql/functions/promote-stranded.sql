-- promote_stranded: x_successor's sweep (reclaim.sql's caller runs it): promotes pending
-- successors whose holder already ended but which its finish did not promote (the trigger's
-- promotion failed, a WARNING, or the holder ended while the triggers were missing), so a
-- successor is late at worst, never lost.
--
-- Parameters: p_limit int (at most this many per call).
-- Steps: for each successor whose holder's Graphile row is gone or failed for good (unlocked,
--   attempts >= max_attempts): 1. the key's lock, in the lock order (lock_and_read: the key's live
--   Graphile rows, then its head), so that no enqueue of the key decides meanwhile;
--   2. promote_successor. Rows another transaction holds are skipped.
-- Returns: int, the successors promoted.
-- Raises: as lock_and_read (40001 when reclaim emptied the key meanwhile) and insert_job.
-- All-or-nothing: one statement.
create or replace function :OJS_UNIQUE_SCHEMA.promote_stranded(p_limit int) returns int
language plpgsql volatile as $$
declare
  v record;
  v_promoted int := 0;
begin
  for v in
    select s.fingerprint, s.holder_job_id from :OJS_UNIQUE_SCHEMA.successors s
    left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = s.holder_job_id
    where j.id is null or (j.locked_at is null and j.attempts >= j.max_attempts)
    order by s.created_at
    limit p_limit
    for update of s skip locked
  loop
    -- A key with no record left (reclaimed) has nothing to lock: its successor is the key's first job.
    if exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = v.fingerprint) then
      perform :OJS_UNIQUE_SCHEMA.lock_and_read(v.fingerprint, '{}'::text[]);
    end if;
    perform :OJS_UNIQUE_SCHEMA.promote_successor(v.holder_job_id);
    v_promoted := v_promoted + 1;
  end loop;
  return v_promoted;
end
$$;
