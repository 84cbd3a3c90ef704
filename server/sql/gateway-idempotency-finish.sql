-- gateway-idempotency-finish: stores the answer of a request that holds its `Idempotency-Key`
-- claim (gateway-idempotency-claim.sql), so that a retry with the key is answered the same.
--
-- $1 text     scope
-- $2 text     key digest
-- $3 text     the claim's owner
-- $4 integer  the answer's status
-- $5 text     the answer's body (JSON text)
-- $6 text     the answer's Location header, or null
-- $7 float8   the retention, in ms, counted again from now
-- Steps: 1. Only a live, unanswered row `owner` still holds (a claim taken over after its lease
--           passed belongs to the request that took it): write the answer, end the lease.
-- Returns: one row when stored, none when the claim is no longer this owner's.
-- SQLSTATEs: none of its own. One statement.
update :OJS_UNIQUE_SCHEMA.gateway_idempotency
   set status = $4::integer, body = $5::text, location = $6::text, lease_until = null,
       expires_at = now() + $7::float8 * interval '1 millisecond'
 where scope = $1::text and key_hash = $2::text and owner = $3::text and status is null and expires_at > now()
returning 1 as stored;
