-- migration-0001-ledger: the adapter's own tables, in its own schema.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema (option `schema`, default ojs_unique)
-- Steps: 1. `heads`: one row per uniqueness key, the anchor that serialises enqueues of that key.
--        2. `jobs`: one row per job the adapter enqueued (with or without a policy), kept after
--           Graphile Worker deletes its own row, until reclaim finds no policy can need it.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
create table :OJS_UNIQUE_SCHEMA.heads (
  fingerprint text primary key,
  seq bigint not null default 0
);

create table :OJS_UNIQUE_SCHEMA.jobs (
  -- Graphile Worker's _private_jobs.id. No foreign key: a breaking Graphile migration that
  -- recreates the table (as 000011 did) would fail on it, and completed rows are deleted anyway.
  job_id bigint primary key,
  ojs_id text not null unique,
  -- The uniqueness key (spec §4); null for a job enqueued without a policy.
  fingerprint text,
  type text not null,
  queue text not null,
  meta jsonb not null default '{}',
  policy jsonb,
  created_at timestamptz not null,
  -- created_at + period (spec §7), on the database clock; null without a period.
  expires_at timestamptz,
  scheduled_at timestamptz not null,
  max_attempts int not null,
  priority int not null,
  terminal_state text check (terminal_state in ('completed', 'cancelled', 'discarded')),
  finished_at timestamptz,
  final_attempts int,
  replaced_by text
);

create index jobs_fingerprint_idx on :OJS_UNIQUE_SCHEMA.jobs (fingerprint) where fingerprint is not null;
create index jobs_finished_idx on :OJS_UNIQUE_SCHEMA.jobs (finished_at) where terminal_state is not null;
