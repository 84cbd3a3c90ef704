-- job_deleted: the function of install-trigger.sql's AFTER DELETE trigger on Graphile's
-- _private_jobs: labels the deleted job's ledger record with how it ended.
--
-- Parameters: none (a trigger: OLD is Graphile's deleted row).
-- Steps: a row deleted while locked: completed (a worker deletes its own locked row on success);
--   attempts exhausted: discarded (permafail clean-up); otherwise cancelled (remove_job,
--   complete_jobs on a job that never ran). Only a record without a label is written.
--   Then x_successor: the key's pending successor waiting for this job becomes a job
--   (promote_successor), whichever way it ended.
-- Returns: null (an AFTER trigger).
-- Raises: never: a failure is a WARNING and the label is lost (the record then reads as
--   completed), since raising would abort the worker's completion DELETE.
-- All-or-nothing: the UPDATE, then the promotion, each in a block of its own, inside the deleting
--   statement (a failed promotion keeps the successor row and the label).
-- SECURITY DEFINER with search_path pinned: it writes the ledger with its owner's rights, whatever
--   role deletes Graphile's row.
create or replace function :OJS_UNIQUE_SCHEMA.job_deleted() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_successor boolean := false;
begin
  -- Must never raise: an error here aborts the worker's completion DELETE, which nothing awaits,
  -- so Node dies of an unhandled rejection and the job re-runs 4 hours later.
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
    -- Looked up in this block, so a completion without a successor enters no second one.
    v_successor := exists (select 1 from :OJS_UNIQUE_SCHEMA.successors s where s.holder_job_id = old.id);
  exception when others then
    raise warning 'ojs-unique: could not record the end of job % (%: %)', old.id, sqlstate, sqlerrm;
  end;
  if v_successor then
    begin
      perform :OJS_UNIQUE_SCHEMA.promote_successor(old.id);
    exception when others then
      raise warning 'ojs-unique: could not add the successor of job % (%: %)', old.id, sqlstate, sqlerrm;
    end;
  end if;
  return null;
end
$$;
