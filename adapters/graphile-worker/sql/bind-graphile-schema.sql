-- bind-graphile-schema: records which Graphile Worker schema this ledger serves, once, and
-- returns it. A ledger bound to another schema is refused by the installer.
--
-- $1 text  Graphile Worker's schema name
-- Steps: insert the binding if absent (first install), then read it.
-- Returns: one row: value (the bound Graphile Worker schema name).
-- SQLSTATEs: none of its own.
with bound as (
  insert into :OJS_UNIQUE_SCHEMA.settings (name, value) values ('graphile_worker_schema', $1::text)
  on conflict (name) do nothing
  returning value
)
select value from bound
union all
select value from :OJS_UNIQUE_SCHEMA.settings where name = 'graphile_worker_schema'
limit 1;
