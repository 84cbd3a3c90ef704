-- session-alive: whether a database session (backend process) still exists, for the lost-reply
-- check: once the session of a lost connection has ended, nothing it was sent can commit.
--
-- $1 int   the backend process id (pg's client.processID)
-- Steps: one read of pg_stat_activity (every role sees every session's pid). Run in autocommit:
--        inside a transaction the view is a snapshot taken once.
-- Returns: one row while the session exists, none once it has ended.
-- SQLSTATEs: none of its own.
select 1 as alive from pg_catalog.pg_stat_activity where pid = $1::int;
