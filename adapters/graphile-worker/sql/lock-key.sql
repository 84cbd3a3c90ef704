-- lock-key: takes the key's lock (its head row) in the caller's transaction, waiting for a
-- transaction that holds it (an enqueue of the key in flight) to commit or roll back.
--
-- $1 text   the uniqueness key
-- Steps: calls :OJS_UNIQUE_SCHEMA.lock_key (install-functions.sql), the upsert every writing
--        enqueue of the key runs first. Used by the lost-reply recovery before find-request, in a
--        transaction it rolls back (so the upsert leaves nothing).
-- Returns: one row, no useful value.
-- SQLSTATEs: 55P03 when the session's lock_timeout passes first.
select :OJS_UNIQUE_SCHEMA.lock_key($1::text);
