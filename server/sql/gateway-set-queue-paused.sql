-- gateway-set-queue-paused: pauses or resumes an OJS queue for the gateway's fetch
-- (gateway-fetch-job.sql skips a paused queue). Pausing a paused queue keeps its paused_at.
--
-- $1 text     OJS queue
-- $2 boolean  true: pause; false: resume
-- Returns: nothing. SQLSTATEs: none of its own. One statement.
insert into :OJS_UNIQUE_SCHEMA.gateway_queues as g (name, paused_at)
values ($1::text, case when $2::boolean then now() end)
on conflict (name) do update
   set paused_at = case when $2::boolean then coalesce(g.paused_at, now()) end;
