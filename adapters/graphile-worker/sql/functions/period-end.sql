-- period_end: anchor + period on the UTC calendar, the SQL twin of the core's addPeriod
-- (src/period.ts): the moment a §7 window measured from `p_anchor` closes. The one place the
-- adapter's SQL adds a period (record_job, touch_jobs, update_job, retained_at).
--
-- Parameters: p_anchor timestamptz; p_period interval (the policy's ISO 8601 period as
--   PostgreSQL reads it: P1M2DT3H is 1 mon 2 days 03:00:00, P1W 7 days, P1Y 12 months).
-- Steps: to UTC wall-clock time, add the interval, back to timestamptz. PostgreSQL adds the
--   months first, clamping the day to the target month's length (31 January + P1M = 28/29
--   February, 29 February + P1Y = 28 February), then the days, then the time; on UTC wall-clock
--   time a day is always 24 hours. So the result never depends on the session's TimeZone: a
--   plain timestamptz + interval follows it, and makes P1D 23 or 25 hours across a DST change.
-- Returns: timestamptz; null when either argument is null.
-- Differs from addPeriod only below the millisecond: PostgreSQL keeps a fraction of a second to
--   the microsecond (PT1.0005S), where the core rounds the period to the nearest millisecond.
--   test/adapters/graphile-worker-period-end.test.ts holds the two together.
-- Raises: 22008 beyond PostgreSQL's timestamps (year 294276; the core refuses a window ending
--   after 9999). All-or-nothing: reads and writes nothing (immutable SQL, inlined into callers).
create or replace function :OJS_UNIQUE_SCHEMA.period_end(p_anchor timestamptz, p_period interval) returns timestamptz
language sql immutable as $$
  select ((p_anchor at time zone 'UTC') + p_period) at time zone 'UTC'
$$;
