-- release-key: releases a uniqueness key (releaseUniqueKey): the next enqueue of it inserts,
-- whatever jobs hold it now. Run in a transaction of its own (retried on 40001/40P01).
--
-- $1 text   the uniqueness key
-- Steps: calls :OJS_UNIQUE_SCHEMA.release_key (functions/release-key.sql): takes the key's lock
--        (lock_and_read's order), moves each of its records' fingerprint to
--        released_fingerprint, drops its retention memory.
-- Returns: one row, `released` int: how many records stopped counting (0: nothing held the key).
-- SQLSTATEs: 40001 when reclaim removed the key's records meanwhile (run it again).
select :OJS_UNIQUE_SCHEMA.release_key($1::text) as released;
