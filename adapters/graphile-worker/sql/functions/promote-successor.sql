-- promote_successor: x_successor: the holder `p_holder` finished (completed, failed for good,
-- cancelled or removed): its key's pending successor becomes a job, under its own policy and key.
--
-- Parameters: p_holder bigint (Graphile's id of the job that finished).
-- Steps: 1. delete the successor row waiting for it (none: nothing to do); 2. insert_job with
--   the stored arguments (created_at = now: the promotion).
-- Returns: void.
-- Raises: as insert_job. Its callers (the finish triggers) catch everything: they must never raise.
-- All-or-nothing: inside its caller's statement (a completion that rolls back adds nothing).
-- Plans: no SET clause: insert_job's add_job plans as under plain addJob.
create or replace function :OJS_UNIQUE_SCHEMA.promote_successor(p_holder bigint) returns void
language plpgsql volatile as $$
declare
  v record;
begin
  delete from :OJS_UNIQUE_SCHEMA.successors s where s.holder_job_id = p_holder returning s.* into v;
  if v.fingerprint is null then
    return;
  end if;
  perform :OJS_UNIQUE_SCHEMA.insert_job(v.identifier, v.payload, v.queue_name, v.run_at, v.max_attempts,
    v.priority, v.flags, v.ojs_id, v.fingerprint, v.queue, v.meta, v.policy, v.period, v.ojs_priority,
    v.request_token);
end
$$;
