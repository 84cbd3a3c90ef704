-- migration-0001-schema: the adapter's tables and indexes, in its own schema (schema version 1).
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema (option `uniqueSchema`, default ojs_unique)
-- Steps: 1. `jobs`, the ledger: one record per job the adapter enqueued (with or without a
--           policy), kept after Graphile Worker deletes its own row, until reclaim finds that no
--           policy can still count it; its indexes;
--        2. `heads`: per uniqueness key, the retention its policies need (record_job writes it,
--           reclaim.sql reads it);
--        3. `gateway_jobs`: what the OJS gateway records of a job, and the visibility reservation
--           of a job an HTTP worker holds (indexed by when it lapses);
--        4. `gateway_queues`: the OJS gateway's pause and rate limit of a queue;
--        5. `gateway_idempotency`: the OJS gateway's `Idempotency-Key` records, and its index by
--           expiry (the sweep, gateway-idempotency-sweep.sql, reads the oldest first);
--        6. `gateway_crons`: the OJS gateway's registered crons and their next ticks.
-- Runs once, in the installer's transaction (after install-bootstrap, before the functions),
-- recorded in :OJS_UNIQUE_SCHEMA.migrations: all-or-nothing with the rest of the install.
-- Raises: nothing of its own.
create table :OJS_UNIQUE_SCHEMA.jobs (
  -- Graphile Worker's _private_jobs.id. No foreign key: a breaking Graphile migration that
  -- recreates the table (as its 000011 did) would fail on it, and completed rows are deleted anyway.
  job_id bigint primary key,
  ojs_id text not null unique,
  -- The uniqueness key (spec §4); null for a job enqueued without a policy, or one that left its
  -- key (released_fingerprint).
  fingerprint text,
  type text not null,
  queue text not null,
  meta jsonb not null default '{}',
  policy jsonb,
  created_at timestamptz not null,
  -- The policy's window end (period_end from its anchor), on the database clock; null without a
  -- period. Reclaim reads it; the duplicate decision is the core's.
  expires_at timestamptz,
  scheduled_at timestamptz not null,
  max_attempts int not null,
  priority int not null,
  -- completed, cancelled or discarded; null while live. No CHECK: PostgreSQL rebuilds a CHECK
  -- from its stored text at the start of every statement that inserts into the table, and the
  -- only writers are the adapter's own functions (job_deleted, cancel_jobs), with literal values.
  terminal_state text,
  finished_at timestamptz,
  final_attempts int,
  replaced_by text,
  -- The request token of the enqueue that wrote the record: find-request.sql answers a lost reply by it.
  request_token uuid,
  -- True on the key's head record, whose row lock is the key's lock (lock_head); null otherwise.
  head boolean,
  -- The last duplicate attempt (touch_jobs), for x_period_anchor "last_duplicate".
  last_duplicate_at timestamptz,
  -- The key of a record that left it (a replace superseded it, or release_key): no enqueue counts
  -- it any more, and OJS INFO still reports its key.
  released_fingerprint text
);

-- A key's reads: one index branch per state (candidates), so a terminal state the policy does not
-- check is never fetched and a key's history costs its reads nothing.
create index jobs_fingerprint_state_idx on :OJS_UNIQUE_SCHEMA.jobs (fingerprint, terminal_state)
  where fingerprint is not null;
-- Reclaim's scan. `finished_at is not null` (set exactly when terminal_state is) rather than
-- `terminal_state is not null`, which a candidate read's `terminal_state = 'completed'` implies:
-- with that predicate the planner could pick this index for a key's read, scanning every
-- terminal record of every key, whenever the statistics said there were few.
create index jobs_finished_at_idx on :OJS_UNIQUE_SCHEMA.jobs (finished_at) where finished_at is not null;
-- At most one head record per key: a concurrent insert of a head for the key waits on it, then conflicts.
create unique index jobs_head_idx on :OJS_UNIQUE_SCHEMA.jobs (fingerprint) where head;
-- The records that left their key, by that key: find-request.sql still finds a record a replace
-- superseded by an index probe.
create index jobs_released_idx on :OJS_UNIQUE_SCHEMA.jobs (released_fingerprint)
  where fingerprint is null and released_fingerprint is not null;

create table :OJS_UNIQUE_SCHEMA.heads (
  fingerprint text primary key,
  -- {"completed"|"cancelled"|"discarded": [entry, …]}: every (terminal state, period) a policy
  -- inserted under the key checks, each entry the period ("P1D"), prefixed with the policy's
  -- anchor when it has one ("scheduled_at P1D"), or "forever" (retained_at reads them). A row
  -- exists only for keys whose policies check a terminal state.
  retention jsonb not null default '{}'
);

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
