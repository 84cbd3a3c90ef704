-- install-lock: one installer at a time per adapter schema. Run first inside the installer's
-- transaction; the lock ends with it.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA_NAME (string literal).
-- Returns: one row (void).
-- SQLSTATEs: none of its own (it waits).
select pg_advisory_xact_lock(hashtext('ojs-unique:' || :OJS_UNIQUE_SCHEMA_NAME));
