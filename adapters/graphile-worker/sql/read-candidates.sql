-- read-candidates: the jobs recorded under a key, as the enqueue reads them, without any lock
-- (findUniqueJob): a committed snapshot, enough to answer which job holds the key now.
--
-- $1 text    the uniqueness key
-- $2 text[]  the states whose terminal records to read (live records are always read)
-- Steps: calls :OJS_UNIQUE_SCHEMA.candidates (functions/candidates.sql) at the database's clock.
-- Returns: one row, `result` json: {"now": epoch ms, "candidates": as lock-and-read reports them}.
-- SQLSTATEs: 42883 when the functions are not installed.
select json_build_object('now', floor(extract(epoch from c.at) * 1000),
  'candidates', coalesce(:OJS_UNIQUE_SCHEMA.candidates($1::text, $2::text[], c.at), '[]'::json)) as result
from (select clock_timestamp() as at) c;
