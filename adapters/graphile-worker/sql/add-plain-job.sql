-- add-plain-job: a job without an OJS policy, on the caller's connection: exactly what
-- Graphile's own addJob sends, so `jobKey` and `jobKeyMode` keep their Graphile meaning.
--
-- $1 text identifier, $2 json payload, $3 text queue_name, $4 timestamptz run_at,
-- $5 int max_attempts, $6 text job_key, $7 int priority, $8 text[] flags, $9 text job_key_mode
-- (every one but $1 may be null for Graphile's default).
-- Returns: Graphile's job row (all-null columns when its race between two adds of one key
-- dropped the job).
-- SQLSTATEs: GWBKM for an unknown job_key_mode (Graphile's own).
select * from :GRAPHILE_WORKER_SCHEMA.add_job(
  identifier => $1::text, payload => $2::json, queue_name => $3::text, run_at => $4::timestamptz,
  max_attempts => $5::int, job_key => $6::text, priority => $7::int, flags => $8::text[],
  job_key_mode => $9::text);
