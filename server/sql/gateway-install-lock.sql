-- gateway-install-lock: one gateway installer at a time per adapter schema, apart from the
-- adapter's own installer lock. Run first inside the gateway installer's transaction; the lock
-- ends with it.
--
-- Params: none. Placeholders: :OJS_UNIQUE_SCHEMA_NAME (string literal).
-- Returns: one row (void).
-- SQLSTATEs: none of its own (it waits).
select pg_advisory_xact_lock(hashtext('ojs-unique-gateway:' || :OJS_UNIQUE_SCHEMA_NAME));
