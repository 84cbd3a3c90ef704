-- read-graphile-id: Graphile Worker's job id for an OJS id (they differ when the caller chose
-- the OJS id), for Graphile's own APIs (rescheduleJobs, completeJobs, …).
--
-- $1 text  OJS id
-- Returns: zero or one row: job_id (text).
-- SQLSTATEs: none of its own.
select job_id::text from :OJS_UNIQUE_SCHEMA.jobs where ojs_id = $1::text;
