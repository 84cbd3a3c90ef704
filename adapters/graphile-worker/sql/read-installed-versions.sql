-- read-installed-versions: the adapter's migrations, schema version and Graphile Worker binding
-- recorded in its schema, in one read. Run when read-install-state found both tables, and again
-- under the installer's lock.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA.
-- Returns: one row: migrations (int[], ascending), version (int: the settings row `version`, null
--          when absent: a schema still being installed, or one a pre-release build installed,
--          which recorded no such row), bound (text: the Graphile Worker schema it serves, null
--          before the first install).
-- SQLSTATEs: 42P01 when the tables are missing; 42501 when the role may not read them.
select
  array(select id from :OJS_UNIQUE_SCHEMA.migrations order by id) as migrations,
  (select value::int from :OJS_UNIQUE_SCHEMA.settings where name = 'version') as version,
  (select value from :OJS_UNIQUE_SCHEMA.settings where name = 'graphile_worker_schema') as bound;
