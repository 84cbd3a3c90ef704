-- gateway-read-side: a job's gateway row (migration-0009-gateway-jobs.sql).
--
-- $1 text  OJS id
-- Returns: zero or one row: side (jsonb). SQLSTATEs: none of its own.
select side from :OJS_UNIQUE_SCHEMA.gateway_jobs where id = $1::text;
