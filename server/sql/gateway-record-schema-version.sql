-- gateway-record-schema-version: records that the gateway's migrations up to $1 are applied, in
-- the gateway installer's transaction (settings row `gateway_version`).
--
-- $1 int  the last gateway migration applied (GATEWAY_SCHEMA_VERSION)
-- Placeholders: :OJS_UNIQUE_SCHEMA (escaped identifier).
-- Returns: nothing.
-- SQLSTATEs: none of its own.
insert into :OJS_UNIQUE_SCHEMA.settings (name, value) values ('gateway_version', $1::int::text)
  on conflict (name) do update set value = excluded.value;
