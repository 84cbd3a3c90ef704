-- transaction-status: whether a transaction committed, by its id, to answer a lost COMMIT reply of
-- a write no request token can be looked up by for certain (an x_successor add: its pending row
-- is overwritten by the key's next one, deleted by a replace or a release, or becomes a job).
--
-- $1 bigint   the transaction's id, txid_current() inside it (keep_successor's answer)
-- Steps: txid_status, read-only.
-- Returns: one row, `status` text: 'committed', 'aborted', 'in progress', or null when the id is
--          too old for the server to tell.
-- SQLSTATEs: 22023 for an id from the future (not this server's).
select txid_status($1::bigint) as status;
