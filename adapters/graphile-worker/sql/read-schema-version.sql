-- read-schema-version: the version of the adapter's functions installed in this schema
-- (SCHEMA_VERSION of the package that installed them).
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA.
-- Returns: zero or one row: version (int). No row: installed before versions were recorded.
-- SQLSTATEs: 42P01 before install-bootstrap ran.
select value::int as version from :OJS_UNIQUE_SCHEMA.settings where name = 'schema_version';
