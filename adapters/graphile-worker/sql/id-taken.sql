-- id-taken: whether a caller-chosen OJS id already names a job (any state, finished ones while
-- their ledger row is kept), for an enqueue about to answer a duplicate (reject/ignore): the id
-- check comes before the policy's answer, as an insert's 23505 on jobs_ojs_id_key would say. A
-- pending x_successor's id is taken too (successors).
--
-- $1 text   the OJS id the caller chose
-- Steps: a read through each unique index on ojs_id; read-only.
-- Returns: one row, `taken` boolean.
-- SQLSTATEs: none of its own.
select exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.ojs_id = $1::text)
  or exists (select 1 from :OJS_UNIQUE_SCHEMA.successors s where s.ojs_id = $1::text) as taken;
