-- gateway-install: the OJS gateway's own table, created when a gateway starts on this schema
-- (never by the adapter's installer: a schema no gateway serves does not have it). One row per
-- job the gateway has something to say about that neither Graphile nor the ledger stores: OJS
-- envelope fields (`tags`, `timeout_ms`, `x_…`), the retry policy, the worker's structured
-- error and result, when an HTTP worker started it.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA (the adapter's schema, already installed).
-- Idempotent. Raises: nothing of its own.
create table if not exists :OJS_UNIQUE_SCHEMA.gateway_jobs (
  -- The OJS id: the ledger's, or Graphile's id for a job added with Graphile's own addJob.
  id text primary key,
  side jsonb not null default '{}'
);
