-- migration-0003-retention: remember, per uniqueness key, every (terminal state, period) that a
-- policy inserted under the key checks, so reclaim keeps a finished job's record as long as ANY
-- policy used on its key could still count it as a duplicate, not only the job's own policy.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. heads.retention jsonb: {"completed"|"cancelled"|"discarded": [ISO period or "forever", …]},
--           '{}' when no policy used on the key checks a terminal state (the default states);
--        2. merge_retention(a, b): the union of two such objects (distinct entries per state);
--        3. retained(entries, created_at, now): whether one of a state's entries still covers a
--           record created at created_at (period on the UTC calendar, as the core's addPeriod);
--        4. note_retention(): AFTER INSERT trigger on the ledger that folds the new job's policy
--           into its key's head row. Its WHEN clause skips, without calling plpgsql, every
--           policy whose states are all live ones (the default), so the usual enqueue pays
--           nothing. The head row is already locked by the enqueue (lock_key), so the upsert
--           never waits; it writes only when the policy adds something (`@>`);
--        5. backfill from the records already in the ledger.
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
alter table :OJS_UNIQUE_SCHEMA.heads add column retention jsonb not null default '{}';

create function :OJS_UNIQUE_SCHEMA.merge_retention(a jsonb, b jsonb) returns jsonb
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

create function :OJS_UNIQUE_SCHEMA.retained(entries jsonb, created_at timestamptz, at timestamptz) returns boolean
language sql immutable as $$
  -- §7.4: a record is a duplicate while now < created_at + period; "forever" is a policy
  -- without a period. `entries` is null when no policy on the key checks the record's state.
  select coalesce((
    select bool_or(e.entry = 'forever'
                   or ((created_at at time zone 'UTC') + e.entry::interval) at time zone 'UTC' > at)
    from jsonb_array_elements_text(entries) e(entry)), false)
$$;

create function :OJS_UNIQUE_SCHEMA.note_retention() returns trigger
language plpgsql as $$
declare
  v_add jsonb;
begin
  select jsonb_object_agg(s.state, jsonb_build_array(coalesce(new.policy ->> 'period', 'forever')))
    into v_add
    from jsonb_array_elements_text(new.policy -> 'states') s(state)
    where s.state in ('completed', 'cancelled', 'discarded');
  -- An upsert, not an update: should reclaim have deleted an empty head row meanwhile, the
  -- retention must still be recorded.
  insert into :OJS_UNIQUE_SCHEMA.heads as h (fingerprint, retention) values (new.fingerprint, v_add)
    on conflict (fingerprint) do update set retention = :OJS_UNIQUE_SCHEMA.merge_retention(h.retention, excluded.retention)
    where not h.retention @> excluded.retention;
  return null;
end
$$;

create trigger note_retention after insert on :OJS_UNIQUE_SCHEMA.jobs
  for each row
  when (new.fingerprint is not null and (new.policy -> 'states') ?| array['completed', 'cancelled', 'discarded'])
  execute function :OJS_UNIQUE_SCHEMA.note_retention();

insert into :OJS_UNIQUE_SCHEMA.heads as h (fingerprint, retention)
select fingerprint, jsonb_object_agg(state, entries)
from (
  select l.fingerprint, s.state, jsonb_agg(distinct coalesce(l.policy ->> 'period', 'forever')) as entries
  from :OJS_UNIQUE_SCHEMA.jobs l, jsonb_array_elements_text(l.policy -> 'states') s(state)
  where l.fingerprint is not null and s.state in ('completed', 'cancelled', 'discarded')
  group by l.fingerprint, s.state
) per_state
group by fingerprint
on conflict (fingerprint) do update set retention = :OJS_UNIQUE_SCHEMA.merge_retention(h.retention, excluded.retention);
