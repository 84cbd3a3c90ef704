-- gateway-read-queue: the gateway's settings of an OJS queue (gateway-set-queue-paused.sql,
-- gateway-set-rate-limit.sql).
--
-- $1 text  OJS queue
-- Returns: zero or one row: paused (boolean). SQLSTATEs: none of its own.
select paused_at is not null as paused from :OJS_UNIQUE_SCHEMA.gateway_queues where name = $1::text;
