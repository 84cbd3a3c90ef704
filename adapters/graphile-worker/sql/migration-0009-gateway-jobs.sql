-- migration-0009-gateway-jobs: the OJS gateway's own table (`ojs-unique serve --backend
-- graphile-worker`, server/graphile-worker-gateway-store.ts). One row per job the gateway has
-- something to say about that neither Graphile nor the ledger stores: OJS envelope fields
-- (`tags`, `timeout_ms`, `x_…`), the retry policy, the worker's structured error and result,
-- when an HTTP worker started it. Read and written by gateway-read-side.sql and
-- gateway-write-side.sql; nothing else of the adapter uses it, and it stays empty on a schema
-- no gateway serves.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. gateway_jobs(id text pk, side jsonb).
-- Upgrade: `if not exists`: a gateway of the release before schema version 5 created this very
--      table itself at start-up (same columns); its rows are kept as they are.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
create table if not exists :OJS_UNIQUE_SCHEMA.gateway_jobs (
  -- The OJS id: the ledger's, or Graphile's id for a job added with Graphile's own addJob.
  id text primary key,
  side jsonb not null default '{}'
);
