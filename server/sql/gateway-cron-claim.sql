-- gateway-cron-claim: takes one due tick of a cron for this gateway process: moves the row's
-- next_run_at from the tick read ($2) to the next one ($3), only while it still holds that tick.
-- Two processes that read the same tick both try; the row lock orders them, and the second finds
-- next_run_at moved and claims nothing, so each tick fires once.
--
-- $1 text     name
-- $2 text     the tick read by gateway-cron-due.sql, ms since the epoch
-- $3 text     the next tick, ms since the epoch; null: none
-- Returns: one row (name) when this call took the tick, none otherwise. SQLSTATEs: none of its own.
update :OJS_UNIQUE_SCHEMA.gateway_crons
   set next_run_at = to_timestamp($3::bigint / 1000.0)
 where name = $1::text
   and floor(extract(epoch from next_run_at) * 1000)::bigint = $2::bigint
returning name;
