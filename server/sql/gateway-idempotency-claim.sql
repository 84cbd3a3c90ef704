-- gateway-idempotency-claim: claims an `Idempotency-Key` of the OJS gateway for one request, or
-- says why not (`gateway_idempotency`, migration-0001-schema.sql). Not used by the adapter itself.
--
-- $1 text     scope
-- $2 text     key digest
-- $3 text     the request's fingerprint
-- $4 jsonb    the job ids the request's jobs get (stored with a new record)
-- $5 text     the claim's owner (a random id of the request)
-- $6 float8   the lease, in ms: how long the claim answers "in progress"
-- $7 float8   the retention, in ms: how long the record is kept
-- Steps: 1. No row, or an expired one: write the claim (an expired row is replaced whole).
--        2. A row of the same fingerprint, unanswered, whose lease passed (its owner crashed, or
--           gave up on an unknown outcome): take it over (owner, lease), keeping its ids.
--        3. Otherwise the row as it is: another fingerprint (`mismatch`), an answer (`done`), a
--           lease not yet passed (`in_progress`).
-- Returns: one row: outcome ('claimed' | 'mismatch' | 'done' | 'in_progress'), ids (claimed),
--   resumed (claimed: true when a lapsed claim was taken over), status, body, location (done),
--   retry_after_ms (in_progress). No row when the conflicting row was committed by another
--   session after this statement's snapshot: the caller runs it again.
-- SQLSTATEs: none of its own. One statement.
with claimed as (
  insert into :OJS_UNIQUE_SCHEMA.gateway_idempotency as r
    (scope, key_hash, fingerprint, ids, owner, lease_until, expires_at)
  values ($1::text, $2::text, $3::text, $4::jsonb, $5::text,
          now() + $6::float8 * interval '1 millisecond', now() + $7::float8 * interval '1 millisecond')
  on conflict (scope, key_hash) do update
    set fingerprint = case when r.expires_at <= now() then excluded.fingerprint else r.fingerprint end,
        ids = case when r.expires_at <= now() then excluded.ids else r.ids end,
        expires_at = case when r.expires_at <= now() then excluded.expires_at else r.expires_at end,
        status = null,
        body = null,
        location = null,
        owner = excluded.owner,
        lease_until = excluded.lease_until
    where r.expires_at <= now()
       or (r.status is null and r.fingerprint = excluded.fingerprint and r.lease_until <= now())
  returning r.ids, r.ids <> $4::jsonb as resumed
)
select 'claimed' as outcome, c.ids, c.resumed, null::integer as status, null::text as body, null::text as location,
       null::float8 as retry_after_ms
  from claimed c
union all
select case when r.fingerprint <> $3::text then 'mismatch' when r.status is not null then 'done' else 'in_progress' end,
       null, null, r.status, r.body, r.location,
       greatest(0, extract(epoch from (r.lease_until - now())) * 1000)::float8
  from :OJS_UNIQUE_SCHEMA.gateway_idempotency r
 where r.scope = $1::text and r.key_hash = $2::text and not exists (select 1 from claimed);
