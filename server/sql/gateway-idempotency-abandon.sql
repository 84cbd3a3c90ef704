-- gateway-idempotency-abandon: ends a request's `Idempotency-Key` claim without an answer (its
-- enqueue failed, perhaps after writing), so that the next request with the key takes the claim
-- over at once (gateway-idempotency-claim.sql, step 2) instead of waiting for the lease.
--
-- $1 text  scope
-- $2 text  key digest
-- $3 text  the claim's owner
-- Steps: 1. Only an unanswered row `owner` still holds: its lease ends now.
-- Returns: nothing. SQLSTATEs: none of its own. One statement.
update :OJS_UNIQUE_SCHEMA.gateway_idempotency
   set lease_until = now()
 where scope = $1::text and key_hash = $2::text and owner = $3::text and status is null;
