-- gateway-cron-due: the crons whose next tick has come, on the database's clock, oldest first,
-- and when the next one not yet due is. Reads only: a tick is taken by gateway-cron-claim.sql.
--
-- $1 integer   most crons returned
-- Returns: one row per due cron: name, definition (jsonb), tick (text, ms since the epoch), now
-- (text, ms); and one row with name null and tick the earliest tick not due (null: none).
-- SQLSTATEs: none of its own.
(select name, definition,
        floor(extract(epoch from next_run_at) * 1000)::bigint::text as tick,
        floor(extract(epoch from clock_timestamp()) * 1000)::bigint::text as now
   from :OJS_UNIQUE_SCHEMA.gateway_crons
  where next_run_at <= clock_timestamp()
  order by next_run_at
  limit $1::integer)
union all
select null, null,
       floor(extract(epoch from min(next_run_at)) * 1000)::bigint::text,
       floor(extract(epoch from clock_timestamp()) * 1000)::bigint::text
  from :OJS_UNIQUE_SCHEMA.gateway_crons
 where next_run_at > clock_timestamp();
