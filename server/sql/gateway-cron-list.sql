-- gateway-cron-list: the OJS gateway's crons, by name; one cron when $1 names it.
--
-- $1 text   a cron's name, or null: every cron
-- Returns: name, definition (jsonb), created_at, next_run_at, last_run_at (text, ms since the
-- epoch; null when unset), run_count (text), last_job_id. SQLSTATEs: none of its own.
select name, definition,
       floor(extract(epoch from created_at) * 1000)::bigint::text as created_at,
       floor(extract(epoch from next_run_at) * 1000)::bigint::text as next_run_at,
       floor(extract(epoch from last_run_at) * 1000)::bigint::text as last_run_at,
       run_count::text as run_count, last_job_id
  from :OJS_UNIQUE_SCHEMA.gateway_crons
 where $1::text is null or name = $1::text
 order by name;
