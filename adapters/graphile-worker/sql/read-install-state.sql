-- read-install-state: what is installed of the adapter's schema, from the catalogs only, so that
-- a start-up can tell "current" from "install needed" without creating anything or failing on a
-- missing object. Needs no privilege beyond connecting (the catalogs are readable by everyone).
--
-- Params: none. Placeholders:
--   :OJS_UNIQUE_SCHEMA_NAME        the adapter's schema (string literal)
--   :GRAPHILE_WORKER_SCHEMA_NAME   Graphile Worker's schema (string literal), for the trigger
-- Returns: one row: schema_exists, tables_exist (its migrations and settings tables), trigger_exists
--          (install-trigger.sql's two triggers on _private_jobs), all boolean.
-- SQLSTATEs: none of its own.
select
  exists (select 1 from pg_catalog.pg_namespace where nspname = :OJS_UNIQUE_SCHEMA_NAME) as schema_exists,
  (select count(*) from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = :OJS_UNIQUE_SCHEMA_NAME and c.relname in ('migrations', 'settings') and c.relkind = 'r') = 2 as tables_exist,
  exists (
    select 1 from pg_catalog.pg_trigger t
      join pg_catalog.pg_class c on c.oid = t.tgrelid
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = :GRAPHILE_WORKER_SCHEMA_NAME and c.relname = '_private_jobs'
       and t.tgname = left('ojs_unique_job_deleted_' || :OJS_UNIQUE_SCHEMA_NAME, 63)
  ) and exists (
    select 1 from pg_catalog.pg_trigger t
      join pg_catalog.pg_class c on c.oid = t.tgrelid
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = :GRAPHILE_WORKER_SCHEMA_NAME and c.relname = '_private_jobs'
       and t.tgname = left('ojs_unique_job_failed_' || :OJS_UNIQUE_SCHEMA_NAME, 63)
  ) as trigger_exists;
