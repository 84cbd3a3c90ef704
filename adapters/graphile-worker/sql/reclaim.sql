-- reclaim: deletes ledger records no policy can still count as a duplicate (retention).
--
-- $1 interval  grace: terminal records are kept at least this long after they ended
-- $2 int       at most this many records per call (the caller loops while it returns $2)
-- Steps: 1. pick terminal records past the grace period that no policy used on their key can
--           still match. A policy P matches a record in terminal state T, created at C, while
--           T is in P.states and now < A + P.period (or P has no period: for ever), A being C or,
--           under P's x_period_anchor, the record's due time, last duplicate attempt or finish
--           (finished_at: its own expires_at, set at insert, is then only a lower bound). The policies
--           considered are the record's own and every one inserted under its key, which
--           record_job folds into the key's head row (heads.retention). So a
--           record enqueued under a narrow policy stays visible to a wider one used on the same
--           key, exactly as long as the wider one can need it;
--        2. delete them (SKIP LOCKED: never waits for, nor races with, an enqueue reading them);
--        3. delete the head rows of keys left with no record, unless they remember a policy
--           (retention <> '{}'): a later record of the key needs that memory. A concurrent
--           enqueue of such a key re-creates its head row; the primary key still serialises it.
-- Returns: one row: reclaimed (int), heads (int).
-- SQLSTATEs: none of its own.
with doomed as (
  select l.job_id, l.fingerprint from :OJS_UNIQUE_SCHEMA.jobs l
  left join :OJS_UNIQUE_SCHEMA.heads h on h.fingerprint = l.fingerprint
  where l.terminal_state is not null
    and l.finished_at <= clock_timestamp() - $1::interval
    -- Its own policy (also in the head's retention; checked here too, so a
    -- head row lost to a race cannot shorten a record's life below its own policy's). A record
    -- that left its key (a replace superseded it, or release_key) counts for no policy.
    and (l.fingerprint is null or not (l.policy is not null
             and (l.policy -> 'states') ? l.terminal_state
             and (l.expires_at is null or l.expires_at > clock_timestamp()
                  or (l.policy ->> 'x_period_anchor' = 'finished_at'
                      and :OJS_UNIQUE_SCHEMA.period_end(l.finished_at, (l.policy ->> 'period')::interval) > clock_timestamp()))))
    -- Every policy inserted under the key, each measured from its own anchor (x_period_anchor).
    and not :OJS_UNIQUE_SCHEMA.retained_at(h.retention -> l.terminal_state, l.created_at, l.scheduled_at,
                                          l.last_duplicate_at, clock_timestamp())
    -- A "finished_at P" entry, which retained_at measures from creation (a lower bound), from the
    -- record's finish.
    and not exists (select 1 from jsonb_array_elements_text(h.retention -> l.terminal_state) e(entry)
                    where split_part(e.entry, ' ', 1) = 'finished_at'
                      and :OJS_UNIQUE_SCHEMA.period_end(l.finished_at, split_part(e.entry, ' ', 2)::interval) > clock_timestamp())
  order by l.finished_at
  limit $2::int
  for update of l skip locked
), deleted as (
  delete from :OJS_UNIQUE_SCHEMA.jobs l using doomed where l.job_id = doomed.job_id
  returning l.fingerprint
), counts as (
  delete from :OJS_UNIQUE_SCHEMA.duplicate_counts c using doomed where c.job_id = doomed.job_id
), heads as (
  delete from :OJS_UNIQUE_SCHEMA.heads h
  where h.fingerprint in (select fingerprint from deleted where fingerprint is not null)
    and h.retention = '{}'::jsonb
    and not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l
                    where l.fingerprint = h.fingerprint
                      and l.job_id not in (select job_id from doomed))
  returning 1
)
select (select count(*) from deleted)::int as reclaimed, (select count(*) from heads)::int as heads;
