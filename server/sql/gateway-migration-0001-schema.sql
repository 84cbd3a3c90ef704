-- gateway-migration-0001-schema: the OJS gateway's tables on Graphile Worker, in the adapter's
-- schema beside its ledger (gateway schema version 1). Empty unless a gateway serves the schema.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema (option `uniqueSchema`, default ojs_unique)
-- Steps: 1. `gateway_jobs`: what the gateway records of a job, and the visibility reservation
--           of a job an HTTP worker holds (indexed by when it lapses);
--        2. `gateway_queues`: the gateway's pause and rate limit of a queue;
--        3. `gateway_idempotency`: the gateway's `Idempotency-Key` records, and its index by
--           expiry (the sweep, gateway-idempotency-sweep.sql, reads the oldest first);
--        4. `gateway_workers`: the gateway's worker signals (quiet, terminate);
--        5. `gateway_crons`: the gateway's registered crons and their next ticks.
--        6. `gateway_workflows` and `gateway_workflow_jobs`: the gateway's workflow records
--           (chain, group, batch) and the link from each of their jobs to its workflow.
-- Runs once, in the gateway installer's transaction (server/graphile-worker-gateway-schema.ts),
-- recorded in :OJS_UNIQUE_SCHEMA.gateway_migrations: all-or-nothing.
-- Raises: nothing of its own.
create table :OJS_UNIQUE_SCHEMA.gateway_jobs (
  -- The OJS id: the ledger's, or Graphile's id for a job added with Graphile's own addJob.
  id text primary key,
  -- The OJS envelope fields neither Graphile nor the ledger stores (tags, timeout_ms, x_…), the
  -- retry policy, the worker's error and result, when an HTTP worker started it
  -- (server/graphile-worker-gateway-store.ts). Empty unless a gateway serves the schema.
  side jsonb not null default '{}',
  -- The OJS visibility timeout of a job an HTTP worker holds, shared by every gateway process
  -- over the schema (gateway-reserve-job.sql, gateway-lapsed-reservations.sql): the Graphile job,
  -- when the reservation lapses (null: none), and the `locked_at` of the lock it reserved, so
  -- that a reservation left from an earlier lock of the job never fails a later one.
  graphile_id bigint,
  reserved_until timestamptz,
  reserved_lock_at timestamptz
);
-- The lapsed reservations, read oldest first, never the whole table.
create index gateway_jobs_reserved_idx on :OJS_UNIQUE_SCHEMA.gateway_jobs (reserved_until) where reserved_until is not null;

-- The OJS gateway's settings of a queue: its pause and rate limit, read and counted by
-- gateway-fetch-job.sql, written by gateway-set-queue-paused.sql and gateway-set-rate-limit.sql.
-- Empty unless a gateway serves the schema.
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

-- The OJS gateway's `Idempotency-Key` records (server/graphile-worker-idempotency-records.ts),
-- shared by every gateway process over the database: one row per scope and key digest (the key
-- itself is never stored). Read and written by gateway-idempotency-*.sql. Empty unless a gateway
-- serves the schema.
create table :OJS_UNIQUE_SCHEMA.gateway_idempotency (
  -- Whose key: a digest of the gateway's token, or one scope for a gateway without one.
  scope text not null,
  -- A digest of the key as the client sent it.
  key_hash text not null,
  -- A digest of the request: method, route and canonical body.
  fingerprint text not null,
  -- The job ids given to the request's jobs (a JSON array of strings), kept across takeovers.
  ids jsonb not null,
  -- The request holding the claim, and when its claim lapses (null once answered).
  owner text not null,
  lease_until timestamptz,
  -- The answer, once given: status, JSON body text, Location header.
  status integer,
  body text,
  location text,
  expires_at timestamptz not null,
  primary key (scope, key_hash)
);
create index gateway_idempotency_expires_idx on :OJS_UNIQUE_SCHEMA.gateway_idempotency (expires_at);

-- The OJS gateway's worker signals (server/worker-signal-routes.ts): the state an operator asked
-- of an HTTP worker, which every gateway process over the database answers in the worker's
-- heartbeats until it expires. Read and written by gateway-*-worker-state.sql. Empty unless a
-- gateway serves the schema.
create table :OJS_UNIQUE_SCHEMA.gateway_workers (
  -- The worker id its heartbeats and fetches send.
  worker_id text primary key,
  state text not null check (state in ('quiet', 'terminate')),
  signalled_at timestamptz not null,
  expires_at timestamptz not null
);

-- The OJS gateway's crons (server/graphile-worker-cron-schedules.ts): Graphile Worker's own
-- crontab is fixed when a runner starts, so a cron registered over HTTP is kept here, and every
-- gateway process over the database polls it. A process fires a due tick only after moving the
-- row's next_run_at on in one statement (gateway-cron-claim.sql), so each tick fires once.
-- Read and written by gateway-cron-*.sql. Empty unless a gateway serves the schema.
create table :OJS_UNIQUE_SCHEMA.gateway_crons (
  -- The cron's name (ojs-cron §2.2: [a-z0-9][a-z0-9.-]*, at most 255 characters).
  name text primary key,
  -- The registration as the gateway read it: expression, timezone, overlap policy, the job.
  definition jsonb not null,
  created_at timestamptz not null default now(),
  -- The next tick; null: disabled.
  next_run_at timestamptz,
  -- The last tick that pushed a job, how many did, and the job (the overlap policy reads it).
  last_run_at timestamptz,
  run_count bigint not null default 0,
  last_job_id text
);
create index gateway_crons_next_idx on :OJS_UNIQUE_SCHEMA.gateway_crons (next_run_at) where next_run_at is not null;
-- The OJS gateway's workflow records (server/workflow-record.ts, server/graphile-worker-workflow-records.ts),
-- shared by every gateway process over the database: one row per workflow, each change a
-- compare-and-swap on `version` (gateway-workflow-write.sql). Empty unless a gateway serves the schema.
create table :OJS_UNIQUE_SCHEMA.gateway_workflows (
  id text primary key,
  version integer not null,
  -- The record: type, name, state, times, and each job's id, input, status and result.
  record jsonb not null,
  -- Null while the workflow runs; once it ended, when it is gone (read as absent from then, and
  -- deleted by gateway-workflow-sweep.sql).
  expires_at timestamptz
);
create index gateway_workflows_expires_idx on :OJS_UNIQUE_SCHEMA.gateway_workflows (expires_at) where expires_at is not null;
-- Each job id a workflow gives (steps, jobs, callbacks), to the workflow: what an ack or nack
-- looks up (gateway-workflow-of-job.sql). Written with the record, in one statement.
create table :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs (
  job_id text primary key,
  workflow_id text not null
);
create index gateway_workflow_jobs_workflow_idx on :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs (workflow_id);
