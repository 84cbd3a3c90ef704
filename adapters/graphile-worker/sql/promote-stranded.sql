-- promote-stranded: x_successor's sweep, run by reclaim (graphile-worker-reclaim.ts): promotes
-- the pending successors whose holder ended without promoting them (functions/promote-stranded.sql).
--
-- $1 int   at most this many per call
-- Steps: calls :OJS_UNIQUE_SCHEMA.promote_stranded.
-- Returns: one row, `promoted` int.
-- SQLSTATEs: 40001 when reclaim emptied a key meanwhile (run it again).
select :OJS_UNIQUE_SCHEMA.promote_stranded($1::int) as promoted;
