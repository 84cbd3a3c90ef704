-- migration-0007-head-record: a key's lock moves from its `heads` row to one of its own ledger
-- records, the key's head record, so that the first job of a key is one write beside Graphile's.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. jobs.head (boolean, null but on a head record);
--        2. jobs_head_idx: unique on (fingerprint) where head, at most one head record per key.
-- Why: every writing enqueue of a key wrote (or updated) its `heads` row to take the key's lock,
--      then its ledger row: two writes beside Graphile's. Now the first job of a key inserts its
--      ledger record as the head, and that insert is the lock (a concurrent insert of a head for
--      the key waits on jobs_head_idx); later enqueues lock the head record (SELECT … FOR UPDATE).
--      `heads` keeps only the retention memory (migration 0003), written as before.
-- Upgrade: no backfill. Keys recorded before this migration have no head record; the next
--      writing enqueue of such a key promotes its oldest record (lock_head, install-functions.sql).
--      Adding a nullable column without a default rewrites nothing; the index is built inside the
--      installer's transaction: one scan of the ledger, no entry yet.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
alter table :OJS_UNIQUE_SCHEMA.jobs add column if not exists head boolean;
create unique index jobs_head_idx on :OJS_UNIQUE_SCHEMA.jobs (fingerprint) where head;
