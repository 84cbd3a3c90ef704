-- gateway-set-worker-state: an operator asks an HTTP worker to go quiet or terminate
-- (server/worker-signal-routes.ts); the worker hears it in its heartbeat's answer
-- (gateway-read-worker-state.sql), from any gateway process over the schema. `terminate` is
-- never taken back by a later `quiet`. Signals past their expiry are deleted on the way.
--
-- $1 text     worker id
-- $2 text     'quiet' or 'terminate'
-- $3 float8   how long the signal is kept, in ms
-- Returns: nothing. SQLSTATEs: none of its own (gateway_workers' check refuses another state).
-- One statement.
with swept as (
  delete from :OJS_UNIQUE_SCHEMA.gateway_workers where expires_at <= now() and worker_id <> $1::text
)
insert into :OJS_UNIQUE_SCHEMA.gateway_workers as w (worker_id, state, signalled_at, expires_at)
values ($1::text, $2::text, now(), now() + $3::float8 * interval '1 millisecond')
on conflict (worker_id) do update
   set state = case when w.state = 'terminate' and w.expires_at > now() then 'terminate' else excluded.state end,
       signalled_at = excluded.signalled_at,
       expires_at = excluded.expires_at;
