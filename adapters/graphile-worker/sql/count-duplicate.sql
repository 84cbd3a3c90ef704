-- count-duplicate: counts an enqueue on the job it met and left holding the key (ignore, reject,
-- x_update): functions/count-duplicate.sql. On the read-only path in autocommit, on the locked
-- path in its transaction (a reject commits it before throwing).
--
-- $1 bigint  Graphile job id of the existing job (the decision's `existing`)
-- $2 uuid    the enqueue's request token
-- Returns: one row, result: json {duplicate_count, last_duplicate_at (epoch ms)}: the count after
--          this enqueue (unchanged when this token was counted already).
-- SQLSTATEs: none of its own.
select :OJS_UNIQUE_SCHEMA.count_duplicate($1::bigint, $2::uuid) as result;
