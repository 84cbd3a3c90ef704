-- try-enqueue: the one-round-trip unique enqueue. In autocommit (the adapter's own path) or
-- inside the caller's transaction.
--
-- $1 text      the uniqueness key
-- $2 text[]    the policy's `states` (see lock-and-read)
-- $3..$16      as insert-job's $1..$8 and $10..$15: identifier, payload json, Graphile
--              queue_name, run_at, max_attempts, Graphile priority, flags, OJS id, OJS queue,
--              meta jsonb, policy jsonb, period interval, OJS priority, request token
-- Steps: calls :OJS_UNIQUE_SCHEMA.try_enqueue: read the key's candidates unlocked; if there are
--        none, lock the key (head row), read again and, still none, insert-job, all in this
--        one statement.
-- Returns: one row, `result` json: {"inserted": insert-job's row} when it inserted, else
--          {"now", "candidates"} as lock-and-read reports them, read WITHOUT the key's lock:
--          enough to answer reject/ignore; to write, the caller locks with lock-and-read.
-- SQLSTATEs: as lock-and-read and insert-job (40001, 23505 on the OJS id, 42883).
select :OJS_UNIQUE_SCHEMA.try_enqueue($1::text, $2::text[], $3::text, $4::json, $5::text, $6::timestamptz,
  $7::int, $8::int, $9::text[], $10::text, $11::text, $12::jsonb, $13::jsonb, $14::interval, $15::int, $16::uuid) as result;
