-- record-schema-version: records the version of the functions just installed, in the
-- installer's transaction.
--
-- $1 int  the package's schema version
-- Returns: nothing.
-- SQLSTATEs: none of its own.
insert into :OJS_UNIQUE_SCHEMA.settings (name, value) values ('schema_version', $1::int::text)
  on conflict (name) do update set value = excluded.value;
