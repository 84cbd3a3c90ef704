-- gateway-cron-record-run: records a tick that pushed a job: when, the job, one more run.
--
-- $1 text   name
-- $2 text   the tick, ms since the epoch
-- $3 text   the job's OJS id
-- Returns: nothing. SQLSTATEs: none of its own. One statement.
update :OJS_UNIQUE_SCHEMA.gateway_crons
   set last_run_at = to_timestamp($2::bigint / 1000.0), run_count = run_count + 1, last_job_id = $3::text
 where name = $1::text;
