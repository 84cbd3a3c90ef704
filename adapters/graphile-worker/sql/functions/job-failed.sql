-- job_failed: the function of install-trigger.sql's AFTER UPDATE trigger on Graphile's
-- _private_jobs, fired only when a job fails for good (a worker's failure of its last attempt, or
-- permanently_fail_jobs; Graphile keeps such a row: no delete, so job_deleted never sees it):
-- x_successor's promotion.
--
-- Parameters: none (a trigger: NEW is the failed row; the trigger, `of last_error` with a WHEN
--   clause, selects it).
-- Steps: promote_successor(new.id).
-- Returns: null (an AFTER trigger).
-- Raises: never (as job_deleted: raising would abort the worker's failure UPDATE); a failure is a
--   WARNING and the successor row stays (docs/design/successor.md).
-- SECURITY DEFINER with search_path pinned, as job_deleted.
create or replace function :OJS_UNIQUE_SCHEMA.job_failed() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
begin
  begin
    perform :OJS_UNIQUE_SCHEMA.promote_successor(new.id);
  exception when others then
    raise warning 'ojs-unique: could not add the successor of job % (%: %)', new.id, sqlstate, sqlerrm;
  end;
  return null;
end
$$;
