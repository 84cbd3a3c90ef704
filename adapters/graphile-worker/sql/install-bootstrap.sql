-- install-bootstrap: creates the adapter's schema and its migrations and settings tables if missing.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA (escaped identifier).
-- Steps: 1. create schema if not exists; 2. create the migrations table if not exists;
--        3. create the settings table if not exists: rows `version` (the schema version of the
--           installed functions, record-schema-version.sql) and `graphile_worker_schema` (the
--           Graphile Worker schema this ledger is bound to, whose objects its functions and
--           trigger name; bind-graphile-schema.sql).
-- Idempotent. Raises: 42501 when the role may not create the schema.
create schema if not exists :OJS_UNIQUE_SCHEMA;
create table if not exists :OJS_UNIQUE_SCHEMA.migrations (
  id int primary key,
  ts timestamptz not null default now()
);
create table if not exists :OJS_UNIQUE_SCHEMA.settings (
  name text primary key,
  value text not null
);
