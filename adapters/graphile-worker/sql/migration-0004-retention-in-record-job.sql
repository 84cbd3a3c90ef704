-- migration-0004-retention-in-record-job: the ledger insert stops paying for stored expressions
-- it re-reads on every execution.
--
-- Params: none. Placeholders (substituted with escaped identifiers before the text is sent):
--   :OJS_UNIQUE_SCHEMA        the adapter's schema
-- Steps: 1. drop migration 0003's note_retention AFTER INSERT trigger and its function:
--           record_job (install-functions.sql, installed right after the migrations in the
--           same transaction) now folds a policy's terminal states into the head row itself,
--           and it is the only writer of ledger rows;
--        2. drop the CHECK on jobs.terminal_state: the only writers of that column are the
--           adapter's own functions (job_deleted, cancel_jobs), each with literal values.
-- Why: PostgreSQL rebuilds a trigger's WHEN clause and a CHECK constraint from their stored
--      text (stringToNode) at the start of every statement that inserts into the table, and a
--      plpgsql INSERT is such a statement on every call: dropping both made record_job markedly
--      cheaper (evaluating the WHEN clause cost even when it was false). The test inside
--      record_job is a plpgsql simple expression.
--      Rejected: keeping the CHECK (a cost on every insert and every trigger update, to guard a
--      column no user writes).
-- Runs once, inside the installer's transaction, recorded in :OJS_UNIQUE_SCHEMA.migrations.
-- Raises: nothing of its own.
drop trigger if exists note_retention on :OJS_UNIQUE_SCHEMA.jobs;
drop function if exists :OJS_UNIQUE_SCHEMA.note_retention();
alter table :OJS_UNIQUE_SCHEMA.jobs drop constraint if exists jobs_terminal_state_check;
