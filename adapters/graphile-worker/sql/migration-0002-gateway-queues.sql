-- migration-0002-gateway-queues: the OJS gateway's settings of a queue (schema version 2).
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema (option `uniqueSchema`, default ojs_unique)
-- Steps: 1. `gateway_queues`: the gateway's pause and rate limit of an OJS queue, read and
--           counted by gateway-fetch-job.sql, written by gateway-set-queue-paused.sql and
--           gateway-set-rate-limit.sql.
-- Runs once, in the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations:
-- all-or-nothing with the rest of the install. Empty unless a gateway serves the schema.
-- Raises: nothing of its own.
create table :OJS_UNIQUE_SCHEMA.gateway_queues (
  -- The OJS queue (the ledger's `queue`, else Graphile's queue name, else 'default').
  name text primary key,
  -- When the queue was paused; null: not paused. Only the gateway's fetch reads it: Graphile's
  -- own workers run the queue's jobs still (server/graphile-worker-gateway-store.ts).
  paused_at timestamptz,
  -- The rate limit: at most rate_max jobs handed out per rate_window_ms, a fixed window from
  -- window_start (the first job of the window) counting window_count; null rate_max: no limit.
  rate_max integer,
  rate_window_ms integer,
  window_start timestamptz,
  window_count integer not null default 0
);
