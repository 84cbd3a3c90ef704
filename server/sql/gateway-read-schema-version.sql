-- gateway-read-schema-version: the OJS gateway's schema version in the adapter's schema (settings
-- row `gateway_version`: every gateway migration up to it is applied), read creating nothing.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA (escaped identifier).
-- Returns: one row: version (int, null before the first gateway install).
-- Runs after the adapter's own install (its `settings` table exists by then).
-- SQLSTATEs: 42P01 when the adapter's schema is not installed.
select (select value::int from :OJS_UNIQUE_SCHEMA.settings where name = 'gateway_version') as version;
