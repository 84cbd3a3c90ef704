-- derived_state: the OJS state of a job, from its ledger record and its Graphile row.
--
-- Parameters: terminal_state text (the record's label; null while none), present boolean
--   (Graphile still has the row), locked_at timestamptz, attempts int, max_attempts int,
--   run_at timestamptz (the row's columns, null without a row), at timestamptz (the moment the
--   state is read at).
-- Steps: the label first; then a row gone without one (completed); then Graphile's columns:
--   locked within Graphile's stale-lock threshold active, attempts exhausted discarded, due later
--   retryable (after an attempt) or scheduled, otherwise available.
-- Returns: text, an OJS state. Raises: nothing.
-- All-or-nothing: reads and writes nothing (immutable SQL).
create or replace function :OJS_UNIQUE_SCHEMA.derived_state(
  terminal_state text, present boolean, locked_at timestamptz, attempts int, max_attempts int,
  run_at timestamptz, at timestamptz
) returns text language sql immutable as $$
  -- The ledger's label wins (it is written by whoever ended the job); a row that vanished
  -- without a label can only have been completed while the trigger was missing.
  -- 4 hours is Graphile Worker's own stale-lock threshold (graphile-worker-host.ts).
  select case
    when terminal_state is not null then terminal_state
    when not present then 'completed'
    when locked_at is not null and locked_at > at - interval '4 hours' then 'active'
    when attempts >= max_attempts then 'discarded'
    when run_at > at and attempts > 0 then 'retryable'
    when run_at > at then 'scheduled'
    else 'available'
  end
$$;
