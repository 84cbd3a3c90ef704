-- install-trigger: the AFTER DELETE trigger on Graphile Worker's _private_jobs that records how a
-- job ended (job_deleted(), functions/job-deleted.sql), and the AFTER UPDATE trigger that sees a
-- job fail for good, which Graphile keeps (job_failed(), functions/job-failed.sql: x_successor). Run on every install, whatever the schema
-- version, so a Graphile migration that recreates _private_jobs cannot leave the ledger blind.
--
-- Params: none. Placeholders:
--   :GRAPHILE_WORKER_SCHEMA_NAME   Graphile Worker's schema (string literal), for the trigger's DDL
--   :OJS_UNIQUE_SCHEMA_NAME        the adapter's schema (string literal), for the trigger's name
-- Steps: create each trigger when it is missing. Only then: creating it takes a table lock that
--        would stall running workers for a moment on every start.
-- Raises: 42P01 when Graphile Worker's schema has no _private_jobs (the installer checked it first).
do $$
declare
  v_trigger text := left('ojs_unique_job_deleted_' || :OJS_UNIQUE_SCHEMA_NAME, 63);
  v_failed text := left('ojs_unique_job_failed_' || :OJS_UNIQUE_SCHEMA_NAME, 63);
  v_table regclass := format('%I._private_jobs', :GRAPHILE_WORKER_SCHEMA_NAME)::regclass;
begin
  if not exists (select 1 from pg_catalog.pg_trigger where tgrelid = v_table and tgname = v_trigger) then
    execute format('create trigger %I after delete on %s for each row execute function %I.job_deleted()',
      v_trigger, v_table, :OJS_UNIQUE_SCHEMA_NAME);
  end if;
  -- A job failing for good, which Graphile keeps: a worker's failure of the last attempt (it
  -- unlocks the row, attempts = max_attempts) or permanently_fail_jobs (attempts = max_attempts).
  -- Both set last_error, which a worker's fetch never does: `of last_error` keeps the fetch from
  -- even evaluating the WHEN clause (a trigger `of locked_at, attempts` would run on every fetch;
  -- the figures are in docs/design/successor.md).
  if not exists (select 1 from pg_catalog.pg_trigger where tgrelid = v_table and tgname = v_failed) then
    execute format('create trigger %I after update of last_error on %s for each row '
      'when (new.locked_at is null and new.attempts >= new.max_attempts) '
      'execute function %I.job_failed()',
      v_failed, v_table, :OJS_UNIQUE_SCHEMA_NAME);
  end if;
end
$$;
