-- gateway-cron-upsert: registers a cron of the OJS gateway, or replaces the one of its name
-- (ojs-cron §8.1's upsert): its definition and next tick change; its creation time and run
-- history stay.
--
-- $1 text         name
-- $2 jsonb        definition
-- $3 text         next tick, ms since the epoch; null: disabled
-- Returns: one row: the cron (gateway-cron-list.sql's columns) and created (boolean: it was new).
-- SQLSTATEs: none of its own. One statement.
insert into :OJS_UNIQUE_SCHEMA.gateway_crons as c (name, definition, next_run_at)
values ($1::text, $2::jsonb, to_timestamp($3::bigint / 1000.0))
on conflict (name) do update
   set definition = excluded.definition, next_run_at = excluded.next_run_at
returning c.name, c.definition,
          floor(extract(epoch from c.created_at) * 1000)::bigint::text as created_at,
          floor(extract(epoch from c.next_run_at) * 1000)::bigint::text as next_run_at,
          floor(extract(epoch from c.last_run_at) * 1000)::bigint::text as last_run_at,
          c.run_count::text as run_count, c.last_job_id, (xmax = 0) as created;
