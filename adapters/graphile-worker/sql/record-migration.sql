-- record-migration: marks one of the adapter's migrations applied, in the transaction that ran it.
--
-- $1 int  the migration id
-- Returns: nothing.
-- SQLSTATEs: 23505 if it was already recorded (cannot happen under install-lock).
insert into :OJS_UNIQUE_SCHEMA.migrations (id) values ($1::int);
