-- gateway-set-rate-limit: sets an OJS queue's rate limit for the gateway's fetch (at most $2
-- jobs handed out per $3 ms, counted by gateway-fetch-job.sql), replacing any it had; the
-- current window's count is kept.
--
-- $1 text     OJS queue
-- $2 integer  jobs per window (≥ 1)
-- $3 integer  window in ms (≥ 1)
-- Returns: nothing. SQLSTATEs: none of its own. One statement.
insert into :OJS_UNIQUE_SCHEMA.gateway_queues as g (name, rate_max, rate_window_ms)
values ($1::text, $2::integer, $3::integer)
on conflict (name) do update set rate_max = $2::integer, rate_window_ms = $3::integer;
