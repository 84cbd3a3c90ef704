-- gateway-cron-delete: unregisters a cron of the OJS gateway. A tick claimed before it fires
-- still (the cron was due when it went); none is claimed after.
--
-- $1 text   name
-- Returns: the deleted cron (gateway-cron-list.sql's columns), or no row when there was none.
-- SQLSTATEs: none of its own. One statement.
delete from :OJS_UNIQUE_SCHEMA.gateway_crons
 where name = $1::text
returning name, definition,
          floor(extract(epoch from created_at) * 1000)::bigint::text as created_at,
          floor(extract(epoch from next_run_at) * 1000)::bigint::text as next_run_at,
          floor(extract(epoch from last_run_at) * 1000)::bigint::text as last_run_at,
          run_count::text as run_count, last_job_id;
