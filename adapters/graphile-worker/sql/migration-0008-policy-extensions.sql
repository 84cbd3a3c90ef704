-- migration-0008-policy-extensions: what the policy extensions need stored (docs/decisions.md,
-- "Policy extensions"): the last duplicate attempt of a job, for `x_period_anchor: "last_duplicate"`;
-- and what releasing a key (releaseUniqueKey) leaves of it.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. jobs.last_duplicate_at (timestamptz, null until an enqueue under a `last_duplicate`
--           policy finds the job a duplicate; written by touch_jobs, install-functions.sql);
--        2. jobs.released_fingerprint (text): the key of a record released by release_key
--           (releaseUniqueKey): its fingerprint is moved here, so no enqueue of the key counts it
--           any more, while OJS INFO still reports the key it was enqueued under;
--        3. retained(entries, created_at, at), the retention test of migration 0003, learns the
--           entries a policy with an anchor leaves on its key's head row ("scheduled_at P1D",
--           "last_duplicate P1D", record_job): it keeps such a record (true). Reclaim from this
--           schema version on calls retained_at, which measures those entries from their anchor;
--           this body only serves a process still running the previous version's reclaim, which
--           would otherwise fail casting such an entry to an interval, and keeps rather than loses.
-- Upgrade: no backfill (no job has had a duplicate counted, nor a key released, yet). Adding a
--      nullable column without a default rewrites nothing.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
alter table :OJS_UNIQUE_SCHEMA.jobs add column if not exists last_duplicate_at timestamptz;
alter table :OJS_UNIQUE_SCHEMA.jobs add column if not exists released_fingerprint text;

create or replace function :OJS_UNIQUE_SCHEMA.retained(entries jsonb, created_at timestamptz, at timestamptz) returns boolean
language sql immutable as $$
  select coalesce((
    select bool_or(case
      when e.entry = 'forever' or position(' ' in e.entry) > 0 then true
      else ((created_at at time zone 'UTC') + e.entry::interval) at time zone 'UTC' > at
    end)
    from jsonb_array_elements_text(entries) e(entry)), false)
$$;
