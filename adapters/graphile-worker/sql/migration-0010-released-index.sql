-- migration-0010-released-index: index the records a replace or release_key took their key
-- from, by that key, so that answering a lost reply (find-request.sql) still finds a record a
-- replace superseded meanwhile by an index probe, never a scan of the whole ledger.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. jobs_released_idx: (released_fingerprint) where fingerprint is null and
--           released_fingerprint is not null: only the records that left their key.
-- Cost: built inside the installer's transaction; the rows it covers are those left by
--      release_key and by replaces, which reclaim removes once no policy counts them.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
create index if not exists jobs_released_idx on :OJS_UNIQUE_SCHEMA.jobs (released_fingerprint)
  where fingerprint is null and released_fingerprint is not null;
