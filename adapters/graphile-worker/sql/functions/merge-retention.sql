-- merge_retention: the union of two `heads.retention` objects ({state: [entry, …]}, record_job).
--
-- Parameters: a jsonb, b jsonb.
-- Steps: every (state, entry) pair of both, entries distinct and sorted per state.
-- Returns: jsonb; '{}' when both are empty. Raises: nothing.
-- All-or-nothing: reads and writes nothing (immutable SQL).
create or replace function :OJS_UNIQUE_SCHEMA.merge_retention(a jsonb, b jsonb) returns jsonb
language sql immutable as $$
  select coalesce(jsonb_object_agg(state, entries), '{}'::jsonb)
  from (
    select state, jsonb_agg(distinct entry order by entry) as entries
    from (
      select x.state, e.entry from jsonb_each(a) x(state, list), jsonb_array_elements(x.list) e(entry)
      union all
      select x.state, e.entry from jsonb_each(b) x(state, list), jsonb_array_elements(x.list) e(entry)
    ) pairs
    group by state
  ) merged
$$;
