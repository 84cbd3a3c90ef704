-- gateway-write-side: merges fields into a job's gateway row (migration-0009-gateway-jobs.sql); a field set
-- to JSON null is removed.
--
-- $1 text   OJS id
-- $2 jsonb  the fields to set
-- Returns: nothing. SQLSTATEs: none of its own. One statement.
insert into :OJS_UNIQUE_SCHEMA.gateway_jobs as g (id, side) values ($1::text, jsonb_strip_nulls($2::jsonb))
on conflict (id) do update set side = jsonb_strip_nulls(g.side || $2::jsonb);
