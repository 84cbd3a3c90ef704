-- gateway-read-worker-state: the state an operator asked of an HTTP worker
-- (gateway-set-worker-state.sql), unless it expired.
--
-- $1 text  worker id
-- Returns: zero or one row: state ('quiet' or 'terminate'). SQLSTATEs: none of its own.
select state from :OJS_UNIQUE_SCHEMA.gateway_workers where worker_id = $1::text and expires_at > now();
