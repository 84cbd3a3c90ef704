-- replace-jobs: the write half of a replace (§5.2/§5.3) in one statement. Run it in the
-- transaction that ran lock-and-read, after decideConflict chose `replace`.
--
-- $1..$14     as insert-job's $1..$14 (the new job)
-- $15 bigint[] Graphile job ids of the duplicates the replace supersedes (the live ones locked
--              by lock-and-read): cancelled when live, and all taken off the key
-- $16 boolean  fence: whether a running (locked) job may be cancelled
-- $17 uuid     the enqueue's request token, as insert-job's $15
-- Steps: calls :OJS_UNIQUE_SCHEMA.replace_jobs (functions/replace-jobs.sql): insert_job, then
--        cancel_jobs with the new job's OJS id as replaced_by (cancel-jobs's steps).
-- Returns: one row, `result` json: {"inserted": insert-job's result, "cancelled": [cancel-jobs's
--          rows]}.
-- SQLSTATEs: as insert-job.
select :OJS_UNIQUE_SCHEMA.replace_jobs($1::text, $2::json, $3::text, $4::timestamptz, $5::int, $6::int,
  $7::text[], $8::text, $9::text, $10::text, $11::jsonb, $12::jsonb, $13::interval, $14::int, $15::bigint[],
  $16::boolean, $17::uuid) as result;
