-- find-request: the ledger row an enqueue wrote, by its request token, to answer a lost reply.
--
-- $1 text   the uniqueness key the enqueue used
-- $2 uuid   the enqueue's request token (jobs.request_token)
-- Steps: one read through the (fingerprint, terminal_state) index, filtered by token, and one
--        through jobs_released_idx: a record a later replace took the key from
--        meanwhile is found too.
-- Returns: zero or one row, `result` json: insert-job's result for that row ({job_id, id,
--          created_at, scheduled_at, max_attempts}).
-- SQLSTATEs: none of its own.
select json_build_object('job_id', l.job_id::text, 'id', l.ojs_id, 'created_at', l.created_at,
    'scheduled_at', l.scheduled_at, 'max_attempts', l.max_attempts) as result
  from (select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = $1::text and l.request_token = $2::uuid
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint is null and l.released_fingerprint = $1::text and l.request_token = $2::uuid) l;
