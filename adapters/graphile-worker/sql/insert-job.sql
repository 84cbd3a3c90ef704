-- insert-job: adds one job through Graphile Worker's own add_job and records it in the ledger,
-- in one statement. For a unique job, run it in the transaction that ran lock-and-read.
--
-- $1 text         task identifier (OJS type)
-- $2 json         payload (OJS args)
-- $3 text         Graphile queue_name, or null (the default: jobs run in parallel)
-- $4 timestamptz  run_at, or null for the database's now()
-- $5 int          max_attempts, or null for Graphile's default (25)
-- $6 int          Graphile priority (smaller runs first), or null for 0
-- $7 text[]       Graphile flags, or null
-- $8 text         OJS id, or null to use Graphile's job id
-- $9 text         uniqueness key, or null for a job without a policy
-- $10 text        OJS queue (stored in the ledger only)
-- $11 jsonb       OJS meta
-- $12 jsonb       the parsed policy, or null
-- $13 text        the policy's period as ISO 8601 (PostgreSQL reads it as an interval), or null
-- $14 int         OJS priority (higher runs first), stored for the envelope view
-- Steps: 1. add_job with job_key => null: the adapter never takes a job key, so Graphile's
--           key-replace path, and its race that drops the job (#580), are never entered.
--        2. insert the ledger row, created_at = clock_timestamp() (database clock), expires_at =
--           created_at + period (used by reclaim only; the duplicate decision is the core's).
-- Returns: one row: job_id (text), id, created_at, scheduled_at (ISO text), max_attempts.
-- SQLSTATEs: 23505 on jobs_ojs_id_key (the OJS id is taken); 23502 if add_job returned no row.
with clock as (
  select clock_timestamp() as t
), job as (
  select * from :GRAPHILE_WORKER_SCHEMA.add_job(
    identifier => $1::text, payload => $2::json, queue_name => $3::text, run_at => $4::timestamptz,
    max_attempts => $5::int, job_key => null, priority => $6::int, flags => $7::text[])
), ledger as (
  insert into :OJS_UNIQUE_SCHEMA.jobs (job_id, ojs_id, fingerprint, type, queue, meta, policy,
    created_at, expires_at, scheduled_at, max_attempts, priority)
  select job.id, coalesce($8::text, job.id::text), $9::text, $1::text, $10::text, $11::jsonb, $12::jsonb,
    clock.t,
    -- On the UTC calendar, as the core's addPeriod: timestamptz + interval would follow the
    -- session's time zone and make P1D 23 or 25 hours across a DST change.
    ((clock.t at time zone 'UTC') + $13::interval) at time zone 'UTC',
    job.run_at, job.max_attempts, $14::int
  from job, clock
  returning job_id, ojs_id, created_at, scheduled_at, max_attempts
)
select job_id::text, ojs_id as id, created_at, scheduled_at, max_attempts from ledger;
