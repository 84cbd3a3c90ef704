-- retained_at: reclaim's retention test: whether a policy used on a key still counts one of its
-- finished records.
--
-- Parameters: entries jsonb (heads.retention for the record's terminal state: ["P1D",
--   "scheduled_at P1D", "last_duplicate P1D", "forever", …], written by record_job; null when no
--   policy on the key checks that state); created_at, scheduled_at, last_duplicate_at
--   timestamptz (the record's anchors); at timestamptz (now).
-- Steps: §7.4 with the x_period_anchor extension: an entry counts the record while at < its
--   anchor (creation; the due time; the last duplicate attempt, creation until one happened)
--   + its period (period_end); "forever" (a policy without a period) always does.
-- Returns: boolean; false for null or empty entries.
-- Raises: nothing for the entries record_job writes.
-- All-or-nothing: reads and writes nothing (immutable SQL).
create or replace function :OJS_UNIQUE_SCHEMA.retained_at(
  entries jsonb, created_at timestamptz, scheduled_at timestamptz, last_duplicate_at timestamptz, at timestamptz
) returns boolean language sql immutable as $$
  -- §7.4 with the x_period_anchor extension: a record is a duplicate while now < anchor + period,
  -- the anchor being the record's creation (the spec's), its due time ("scheduled_at P1D") or
  -- its last duplicate attempt, creation until one happened ("last_duplicate P1D"). "forever" is
  -- a policy without a period. `entries` is null when no policy on the key checks the state.
  select coalesce((
    select bool_or(case
      when e.entry = 'forever' then true
      else :OJS_UNIQUE_SCHEMA.period_end(
             case split_part(e.entry, ' ', 1)
               when 'scheduled_at' then scheduled_at
               when 'last_duplicate' then greatest(created_at, last_duplicate_at)
               else created_at
             end,
             (case when position(' ' in e.entry) > 0 then split_part(e.entry, ' ', 2) else e.entry end)::interval) > at
    end)
    from jsonb_array_elements_text(entries) e(entry)), false)
$$;
