-- record-schema-version: records the schema version of the functions just installed, in the
-- installer's transaction (settings row `version`).
--
-- $1 int  the package's schema version (SCHEMA_VERSION)
-- Returns: nothing.
-- SQLSTATEs: none of its own.
insert into :OJS_UNIQUE_SCHEMA.settings (name, value) values ('version', $1::int::text)
  on conflict (name) do update set value = excluded.value;
