-- migration-0002-fingerprint-state-index: index the ledger by (fingerprint, terminal_state), so a
-- key's reads touch only the records they can use.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. create jobs_fingerprint_state_idx (fingerprint, terminal_state);
--        2. drop jobs_fingerprint_idx (fingerprint), which it replaces (every query that used it
--           filters on the leading column, so each entry an insert writes is still one);
--        3. re-create reclaim's index on finished_at with the predicate `finished_at is not null`
--           (set exactly when terminal_state is) instead of `terminal_state is not null`: the
--           candidate read's `terminal_state = any(states)` implies the old predicate, so the
--           planner could pick that index, scanning every terminal record of every key, whenever
--           the statistics said there were few (as right after an ANALYZE of a live ledger).
-- Why: with (fingerprint) alone, the live read (lock_and_read's FOR UPDATE) and the candidate
-- read visited every record ever kept under the key and filtered out the terminal ones after
-- fetching them. A key replaced n times kept n cancelled records until reclaim, and each replace
-- read them all: its cost grew linearly with the key's history. Now
-- `terminal_state is null` and `terminal_state = any(states)` are index conditions.
-- Cost on upgrade: builds the index inside the installer's transaction (not CONCURRENTLY, which
-- cannot run in one), so enqueues wait for the build, which grows with the ledger.
-- Runs once, recorded in :OJS_UNIQUE_SCHEMA.migrations. Raises: nothing of its own.
create index jobs_fingerprint_state_idx on :OJS_UNIQUE_SCHEMA.jobs (fingerprint, terminal_state)
  where fingerprint is not null;
drop index :OJS_UNIQUE_SCHEMA.jobs_fingerprint_idx;
create index jobs_finished_at_idx on :OJS_UNIQUE_SCHEMA.jobs (finished_at) where finished_at is not null;
drop index :OJS_UNIQUE_SCHEMA.jobs_finished_idx;
