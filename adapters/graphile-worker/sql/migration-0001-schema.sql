-- migration-0001-schema: the adapter's tables and indexes, in its own schema (schema version 1).
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema (option `uniqueSchema`, default ojs_unique)
-- Steps: 1. `jobs`, the ledger: one record per job the adapter enqueued (with or without a
--           policy), kept after Graphile Worker deletes its own row, until reclaim finds that no
--           policy can still count it; its indexes;
--        2. `heads`: per uniqueness key, the retention its policies need (record_job writes it,
--           reclaim.sql reads it); `duplicate_counts`: per job, the duplicates counted on it;
--        3. `successors`: per uniqueness key, the one pending x_successor add (keep_successor
--           writes it, promote_successor makes it a job when its holder finishes);
--        (The OJS gateway's own tables are the gateway's: server/sql/gateway-migration-0001-schema.sql.)
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

-- Duplicate counts (functions/count-duplicate.sql): per job, the enqueues that met it and left it
-- holding its key. A table of its own rather than columns of `jobs`: a key's head record is its
-- lock, and counting on the read-only duplicate path must neither wait for it nor hold it. Deleted
-- with the job's record by reclaim.
create table :OJS_UNIQUE_SCHEMA.duplicate_counts (
  job_id bigint primary key,
  duplicate_count int not null,
  last_at timestamptz not null,
  -- The last counted enqueue's request token: the same enqueue run again is not counted twice.
  request_token uuid
);

create table :OJS_UNIQUE_SCHEMA.heads (
  fingerprint text primary key,
  -- {"completed"|"cancelled"|"discarded": [entry, …]}: every (terminal state, period) a policy
  -- inserted under the key checks, each entry the period ("P1D"), prefixed with the policy's
  -- anchor when it has one ("scheduled_at P1D"), or "forever" (retained_at reads them). A row
  -- exists only for keys whose policies check a terminal state.
  retention jsonb not null default '{}'
);

-- x_successor (docs/design/successor.md): the add a duplicate of a running job left, one per key,
-- with insert_job's arguments, until its holder finishes and promote_successor adds it. Not a
-- Graphile row: a job due at infinity would count as a duplicate and show in Graphile's tooling.
create table :OJS_UNIQUE_SCHEMA.successors (
  fingerprint text primary key,
  -- The running job the successor waits for (Graphile's id); the finish triggers look it up.
  holder_job_id bigint not null,
  -- The id the successor will have: taken while it waits (record_job and id-taken.sql check it).
  ojs_id text not null constraint successors_ojs_id_key unique,
  identifier text not null,
  payload json not null,
  queue_name text,
  run_at timestamptz,
  max_attempts int,
  priority int,
  flags text[],
  queue text not null,
  meta jsonb not null,
  policy jsonb not null,
  period interval,
  ojs_priority int not null,
  request_token uuid,
  created_at timestamptz not null
);
create index successors_holder_idx on :OJS_UNIQUE_SCHEMA.successors (holder_job_id);
