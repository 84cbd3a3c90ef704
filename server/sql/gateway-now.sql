-- gateway-now: the database's clock, the one run_at and the gateway's rate windows count on.
--
-- Params: none.
-- Returns: one row: now (text, ms since the epoch). SQLSTATEs: none of its own.
select floor(extract(epoch from clock_timestamp()) * 1000)::bigint::text as now;
