-- gateway-remove-dead-letter: deletes a dead letter as Graphile's own clean-up of permanently
-- failed jobs does (a DELETE of the row: the adapter's job_deleted trigger labels its ledger
-- record `discarded`, kept for the unique-jobs retention), only while the row is still failed
-- for good, and marks the job's gateway row removed, so that OJS INFO no longer finds it.
--
-- $1 bigint  Graphile job id
-- $2 text    OJS id
-- Returns: one row (job_id) when the job was deleted; none when it is not a dead letter.
-- SQLSTATEs: none of its own. One statement: all-or-nothing.
with removed as (
  delete from :GRAPHILE_WORKER_SCHEMA._private_jobs as jobs
   where jobs.id = $1::bigint
     and jobs.attempts >= jobs.max_attempts
     and (jobs.locked_at is null or jobs.locked_at < now() - interval '4 hours')
  returning jobs.id
), marked as (
  insert into :OJS_UNIQUE_SCHEMA.gateway_jobs as g (id, side)
  select $2::text, jsonb_build_object('removed_at', now()) from removed
  on conflict (id) do update set side = g.side || excluded.side
)
select id::text as job_id from removed;
