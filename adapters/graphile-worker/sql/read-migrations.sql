-- read-migrations: the adapter's migrations already applied in this schema.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA.
-- Returns: one row per applied migration: id (int).
-- SQLSTATEs: 42P01 before install-bootstrap ran.
select id from :OJS_UNIQUE_SCHEMA.migrations order by id;
