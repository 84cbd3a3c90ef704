-- keep-successor: x_successor: keeps the add as the key's one pending successor, replacing any
-- earlier one; it becomes a job when the holder finishes (promote_successor, from the finish
-- triggers). Run in the transaction that ran lock-and-read, after decideUniqueConflict chose
-- `successor`: the holder's Graphile row is locked, so it cannot finish before this commits.
--
-- $1 bigint   Graphile job id of the running holder
-- $2..$15     insert-job's $1..$14 ($9, the OJS id, never null: the caller's or one Node chose)
-- $16 uuid    the enqueue's request token
-- Steps: calls :OJS_UNIQUE_SCHEMA.keep_successor (functions/keep-successor.sql).
-- Returns: one row, `result` json: {id, xid}.
-- SQLSTATEs: 23505 on jobs_ojs_id_key or successors_ojs_id_key (the id is taken).
select :OJS_UNIQUE_SCHEMA.keep_successor($1::bigint, $2::text, $3::json, $4::text, $5::timestamptz, $6::int,
  $7::int, $8::text[], $9::text, $10::text, $11::text, $12::jsonb, $13::jsonb, $14::interval, $15::int,
  $16::uuid) as result;
