-- install-bootstrap: creates the adapter's schema and its migrations table if missing.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA (escaped identifier).
-- Steps: 1. create schema if not exists; 2. create the migrations table if not exists;
--        3. create the settings table that records which Graphile Worker schema this ledger is
--           bound to (its functions and trigger name that schema).
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
