-- read-graphile-migration: Graphile Worker's schema level, checked before the adapter touches
-- its private table.
--
-- Params: none. Placeholders: :GRAPHILE_WORKER_SCHEMA.
-- Returns: one row: id (int, the latest applied migration, null when none).
-- SQLSTATEs: 42P01 when Graphile Worker was never installed in that schema.
select max(id)::int as id from :GRAPHILE_WORKER_SCHEMA.migrations;
