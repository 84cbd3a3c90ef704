-- gateway-idempotency-sweep: deletes expired `Idempotency-Key` rows (`gateway_idempotency`,
-- migration-0001-schema.sql), the oldest first. Run now and then by a gateway (lazily, beside a claim): an
-- expired row is already ignored by the claim, so this only bounds the table.
--
-- $1 integer  at most this many rows
-- Steps: 1. Rows whose expiry passed, by gateway_idempotency_expires_idx, skipping rows another
--           session holds (a claim replacing one, another sweep).
-- Returns: the number of rows deleted (swept). SQLSTATEs: none of its own. One statement.
with swept as (
  delete from :OJS_UNIQUE_SCHEMA.gateway_idempotency
   where (scope, key_hash) in (
     select scope, key_hash from :OJS_UNIQUE_SCHEMA.gateway_idempotency
      where expires_at <= now()
      order by expires_at
      limit $1::integer
        for update skip locked)
  returning 1
)
select count(*)::integer as swept from swept;
