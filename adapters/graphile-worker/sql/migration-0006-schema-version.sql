-- migration-0006-schema-version: from here on the installer records the version of the functions
-- it installs (settings row 'schema_version', see install-functions.sql) and never installs over
-- a newer one.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA.
-- Steps: add the 'schema_version' row (0, "none yet"); the installer writes the real version
--        once it has installed the functions, in the same transaction.
-- Why a migration: packages from before it know migrations 1 to 5 only and refuse a ledger with
-- a newer one, so an older process that restarts against this schema stops with that message
-- instead of reinstalling its older functions over these.
-- Raises: nothing of its own.
insert into :OJS_UNIQUE_SCHEMA.settings (name, value) values ('schema_version', '0')
  on conflict (name) do nothing;
