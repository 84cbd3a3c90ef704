-- reclaim: deletes ledger records no policy can still count as a duplicate (retention).
--
-- $1 interval  grace: terminal records are kept at least this long after they ended
-- $2 int       at most this many records per call (the caller loops while it returns $2)
-- Steps: 1. pick terminal records past the grace period that their own policy can no longer
--           match: enqueued without a policy, or their terminal state is not in the policy's
--           `states`, or their period has expired (created_at + period <= now, database clock);
--        2. delete them (SKIP LOCKED: never waits for, nor races with, an enqueue reading them);
--        3. delete the head rows of keys left with no record. A concurrent enqueue of such a key
--           re-creates its head row; the primary key still serialises it.
-- Returns: one row: reclaimed (int), heads (int).
-- SQLSTATEs: none of its own.
with doomed as (
  select l.job_id, l.fingerprint from :OJS_UNIQUE_SCHEMA.jobs l
  where l.terminal_state is not null
    and l.finished_at <= clock_timestamp() - $1::interval
    and (l.policy is null
         or not (l.policy -> 'states') ? l.terminal_state
         or (l.expires_at is not null and l.expires_at <= clock_timestamp()))
  order by l.finished_at
  limit $2::int
  for update skip locked
), deleted as (
  delete from :OJS_UNIQUE_SCHEMA.jobs l using doomed where l.job_id = doomed.job_id
  returning l.fingerprint
), heads as (
  delete from :OJS_UNIQUE_SCHEMA.heads h
  where h.fingerprint in (select fingerprint from deleted where fingerprint is not null)
    and not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l
                    where l.fingerprint = h.fingerprint
                      and l.job_id not in (select job_id from doomed))
  returning 1
)
select (select count(*) from deleted)::int as reclaimed, (select count(*) from heads)::int as heads;
