-- install-functions: (re)creates the adapter's functions, the bodies of one schema version
-- (SCHEMA_VERSION in graphile-worker-schema.ts). The installer runs it only when the stored
-- version is older than the package's, or a migration just ran, so an older process that
-- restarts never puts its bodies back over a newer version's. Any change to this file (other
-- than a comment line) is a new schema version.
--
-- Params: none. Placeholders (escaped before substitution):
--   :GRAPHILE_WORKER_SCHEMA        Graphile Worker's schema (identifier)
--   :OJS_UNIQUE_SCHEMA             the adapter's schema (identifier)
--   :OJS_UNIQUE_SCHEMA_NAME        the adapter's schema (string literal)
-- Steps: 1. derived_state(): OJS state of a job from its ledger row and Graphile row.
--        2. candidates(): every job recorded under a key, with state and envelope.
--        3. lock_head(fingerprint): locks the key's head record (the per-key lock), promoting
--           one when the key has records but no head; lock_key() calls it for lock-key.sql.
--        4. lock_and_read(fingerprint, states): the live candidates' Graphile rows, then
--           lock_head, then reads candidates (the lock order: see the function).
--        5. record_job(): the ledger row of a job Graphile just added, and its policy's
--           retention on the key's head row (migrations 0003, 0004).
--        6. insert_job(): Graphile's add_job (no job key) plus record_job, in one statement;
--           insert_head_job() the same for a key's first record, its head.
--        7. try_enqueue(): an unlocked read; with no candidate at all, lock, read again and
--           insert_job, or for a key without any record, insert_head_job.
--        8. cancel_jobs(): labels jobs cancelled and deletes or fences Graphile's rows; for a
--           replace, takes the key from every record it met.
--        9. replace_jobs(): insert_job plus cancel_jobs naming the new job, one round trip.
--       10. lock_job(): locks one job for OJS CANCEL, Graphile's row before the ledger's.
--       11. job_deleted(): trigger function recording completed/discarded/cancelled (the trigger
--           itself: install-trigger.sql).
--       12. retained_at(): reclaim's retention test, measuring each policy's period from its
--           anchor (x_period_anchor).
--       13. touch_jobs(): records a duplicate attempt (x_period_anchor "last_duplicate").
--       14. update_job(): copies a new job's fields onto an existing one in place (x_update).
--       15. release_key(): releases a key (releaseUniqueKey): its records stop counting.
-- What these bodies use of Graphile Worker's schema (_private_jobs and its columns, add_job, the
-- stale-lock threshold) is listed, checked and tested in graphile-worker-host.ts.
-- Idempotent. Raises: nothing of its own (plpgsql bodies resolve Graphile's objects when called).
--
-- The key's lock (migration 0007): its head record in the ledger (jobs.head, unique per key),
-- not its `heads` row any more. The first job of a key inserts its own record as the head
-- (insert_head_job); every other writer locks the head record (lock_head), promoting the key's
-- oldest record when it has none (ledgers from before migration 0007, or a head reclaimed before
-- the key's other records).
--
-- Request tokens (migration 0005): record_job, insert_job, try_enqueue and replace_jobs take the
-- enqueue's token as their last parameter and store it on the ledger row. Adding it created new
-- overloads; the previous ones stay installed (untouched) so that a process still running the
-- previous version keeps working until it is restarted.
--
-- Plans: every function that runs the adapter's own statements on the enqueue path carries
-- `set plan_cache_mode = force_generic_plan`. Under the default (`auto`) plpgsql re-plans a
-- statement on every call while its custom plan looks cheaper, which it always does once the
-- policy's `states` are known, and candidates' read (one index branch per state) costs more
-- planned that way than its generic plan. Every predicate here is an equality on a
-- key (fingerprint, terminal state, job id), whose generic plan is the index scan whatever the
-- value. Graphile's add_job is deliberately NOT called under that setting: a SET clause applies
-- to everything the function calls, and add_jobs joins `unnest(specs)` against `_private_jobs`,
-- whose generic plan (no array length known) we do not own and have not proved safe, although
-- Graphile re-plans it on every call; so add_job is only ever called
-- from functions without the clause (insert_job, replace_jobs, try_enqueue), under the session's
-- own setting, exactly as plain addJob runs it.
--
-- The functions that read the ledger by key (candidates, lock_head, lock_and_read, record_job,
-- cancel_jobs) also carry
-- `set enable_seqscan = off`. A generic plan is made once per connection, from the statistics of
-- that moment; on a young install (autovacuum analyzes a table once it has 50 rows) they say
-- "tiny", the plan is a sequential scan, and it stays cached while the table grows, until the
-- next ANALYZE, and a duplicate check slows down as the ledger grows; a test counts the scans
-- (pg_stat_user_tables.seq_scan). Every lookup here has its
-- index, so the setting only removes the plan that can go bad; it changes nothing on a table
-- the planner already reads by index, and the second SET clause costs next to nothing. Not set on
-- insert_job/try_enqueue/replace_jobs, which call Graphile's add_job (see above).
create or replace function :OJS_UNIQUE_SCHEMA.derived_state(
  terminal_state text, present boolean, locked_at timestamptz, attempts int, max_attempts int,
  run_at timestamptz, at timestamptz
) returns text language sql immutable as $$
  -- The ledger's label wins (it is written by whoever ended the job); a row that vanished
  -- without a label can only have been completed while the trigger was missing.
  -- 4 hours is Graphile Worker's own stale-lock threshold (graphile-worker-host.ts).
  select case
    when terminal_state is not null then terminal_state
    when not present then 'completed'
    when locked_at is not null and locked_at > at - interval '4 hours' then 'active'
    when attempts >= max_attempts then 'discarded'
    when run_at > at and attempts > 0 then 'retryable'
    when run_at > at then 'scheduled'
    else 'available'
  end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.candidates(p_fingerprint text, p_states text[], p_now timestamptz)
-- plpgsql for its cached plan: a SQL-language function called from plpgsql is planned anew on
-- every call. Generic plan: see the header.
returns json language plpgsql stable set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
begin
  -- A key with no record at all: one index probe answers, instead of the four-branch read below,
  -- and says so with null rather than '[]' (none the policy counts), so that try_enqueue can
  -- insert the key's head record straight away.
  if not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint) then
    return null;
  end if;
  -- Every job recorded under the key, with its derived state, the numbers decideConflict needs
  -- (ms on the database clock) and its OJS envelope (so `ignore` answers without another query).
  -- Ordered by job id (insertion order), as the (fingerprint) index used to return them.
  return (select coalesce(json_agg(json_build_object(
    'job_id', l.job_id::text, 'id', l.ojs_id,
    'state', :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts,
      j.max_attempts, j.run_at, p_now),
    'created_at', floor(extract(epoch from l.created_at) * 1000),
    'scheduled_at', floor(extract(epoch from coalesce(j.run_at, l.scheduled_at)) * 1000),
    'last_duplicate_at', floor(extract(epoch from l.last_duplicate_at) * 1000),
    -- A replace took the key from it (cancel_jobs): the core never counts it once it is finished.
    -- Only the key's head record can be read so; the others left the key.
    'superseded', l.released_fingerprint is not null,
    'view', json_build_object(
      'type', l.type, 'queue', l.queue, 'args', j.payload, 'meta', l.meta, 'policy', l.policy,
      'fingerprint', l.fingerprint, 'attempt', coalesce(j.attempts, l.final_attempts, 0),
      'max_attempts', coalesce(j.max_attempts, l.max_attempts), 'priority', l.priority,
      'created_at', l.created_at, 'scheduled_at', coalesce(j.run_at, l.scheduled_at),
      'completed_at', l.finished_at, 'replaced_by', l.replaced_by)) order by l.job_id), '[]'::json)
  -- A terminal record whose state the new policy does not check can never be its duplicate;
  -- skipping it keeps a hot key's read small between reclaims. Live records are always read.
  -- One branch per state, so that each is an index condition on (fingerprint, terminal_state)
  -- (migration 0002) and a terminal state the policy does not check is a one-time filter that
  -- skips its branch: written as one OR, or with `terminal_state = any(p_states)` (which the
  -- planner kept as a filter), every record of the key was fetched and then discarded, and a key
  -- replaced n times read its n cancelled records on every enqueue.
  from (select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state is null
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'completed' and 'completed' = any(p_states)
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'cancelled' and 'cancelled' = any(p_states)
        union all
        select * from :OJS_UNIQUE_SCHEMA.jobs l
        where l.fingerprint = p_fingerprint and l.terminal_state = 'discarded' and 'discarded' = any(p_states)
) l
  -- Each record's Graphile row by primary key, one probe per record, whatever the statistics.
  -- A plain LEFT JOIN leaves the generic plan free to pick a merge join that walks
  -- _private_jobs' primary key from its start, which on a key with many records in a large jobs
  -- table costs far more than the probes. LIMIT 1, a no-op on a primary key, keeps the planner
  -- from flattening the subquery back into such a join. On a key with one record it costs the
  -- same as the join.
  left join lateral (select * from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = l.job_id limit 1) j on true);
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint text)
returns boolean language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_job_id bigint;
begin
  -- The per-key lock: the key's head record, locked until the transaction ends. Returns false,
  -- holding nothing, when the key has no record at all: the caller's own insert of a head record
  -- is then the lock (jobs_head_idx makes a concurrent one wait, then conflict).
  -- pg_advisory_xact_lock was rejected: under REPEATABLE READ a caller's snapshot predates the
  -- lock and would miss the winner's job, whereas a row lock then fails with 40001.
  loop
    perform 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint and l.head for update;
    if found then
      return true;
    end if;
    -- No head record: promote the key's oldest record. Its index entry in jobs_head_idx
    -- conflicts with any head a concurrent enqueue inserted or promoted meanwhile (waiting for
    -- it to commit first); then look again and lock that one.
    select min(l.job_id) into v_job_id from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint;
    if v_job_id is null then
      return false;
    end if;
    begin
      -- Still the key's: a replace that held the lock may have taken the key from this record
      -- (cancel_jobs) while we waited for its row; then look again.
      update :OJS_UNIQUE_SCHEMA.jobs l set head = true where l.job_id = v_job_id and l.fingerprint = p_fingerprint;
      if found then
        return true;
      end if;
    exception when unique_violation then
      -- Under REPEATABLE READ the snapshot would never show the winner's head: retry the transaction.
      if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'serialization_failure',
          message = 'ojs-unique: a concurrent enqueue of the same key took its lock first';
      end if;
    end;
  end loop;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.lock_key(p_fingerprint text)
returns void language plpgsql volatile set plan_cache_mode = force_generic_plan as $$
begin
  -- lock-key.sql (the lost-reply check): waits for the transaction holding the key's lock.
  if not :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint) then
    -- No record visible: the lost transaction may be inserting the key's first record, its head,
    -- which no snapshot shows before it commits. A speculative insert of a head for the key
    -- waits on the unique index until that transaction ends (then does nothing). The check runs
    -- in a transaction it rolls back, so this placeholder never stays; its ids cannot collide
    -- with a job's (Graphile's ids are positive).
    insert into :OJS_UNIQUE_SCHEMA.jobs (job_id, ojs_id, fingerprint, type, queue, created_at, scheduled_at,
      max_attempts, priority, head)
    values (-1 - floor(random() * 9e18)::bigint, 'ojs-unique:lock-key:' || gen_random_uuid(), p_fingerprint, '', '',
      clock_timestamp(), clock_timestamp(), 0, 0, true)
    on conflict (fingerprint) where head do nothing;
  end if;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.lock_and_read(p_fingerprint text, p_states text[])
returns json language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_locked bigint[];
  v_late boolean;
  v_now timestamptz;
begin
  -- Lock order (docs/design/graphile-worker.md, "Lock order"): Graphile rows before ledger rows,
  -- in every path that waits. A worker's completion DELETE holds the job's Graphile row while its
  -- trigger labels the job's record, which may be the key's head: an enqueue that held the head
  -- while waiting for that Graphile row would deadlock with it. So:
  --  1. lock the Graphile rows of the key's live records (waiting; no ledger row held yet).
  --     Workers fetch with SKIP LOCKED, so none of these jobs can start before the cancel;
  --  2. lock the head record (waiting for a concurrent enqueue of the key to commit);
  --  3. a job that turned live between 1 and 2 (the head's previous holder inserted it) has its
  --     Graphile row locked NOWAIT: the one lock taken while holding the head never waits. When
  --     it is busy, the block rolls back, releasing the head, and the loop starts again, step 1
  --     now waiting for that row.
  -- Each statement takes a fresh snapshot (READ COMMITTED, volatile function): it sees every
  -- enqueue that committed while we waited.
  loop
    select coalesce(array_agg(g.id), '{}') into v_locked
      from (select j.id from :GRAPHILE_WORKER_SCHEMA._private_jobs j
            where j.id in (select l.job_id from :OJS_UNIQUE_SCHEMA.jobs l
                           where l.fingerprint = p_fingerprint and l.terminal_state is null)
            order by j.id
            for update of j) g;
    v_late := false;
    begin
      -- The caller read candidates before calling this, so the key has records; none any more
      -- means reclaim removed them meanwhile, and no lock is held: the caller retries from its
      -- first read (the adapter's own transaction does so itself).
      if not :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint) then
        raise exception using errcode = 'serialization_failure',
          message = 'ojs-unique: the key''s records were reclaimed during the enqueue';
      end if;
      v_late := true;
      perform 1 from :GRAPHILE_WORKER_SCHEMA._private_jobs j
        where j.id in (select l.job_id from :OJS_UNIQUE_SCHEMA.jobs l
                       where l.fingerprint = p_fingerprint and l.terminal_state is null)
          and j.id <> all (v_locked)
        order by j.id
        for update of j nowait;
      exit;
    exception when lock_not_available then
      -- Only step 3's NOWAIT goes round again; the session's lock_timeout while waiting for the
      -- head is the caller's.
      if not v_late then
        raise;
      end if;
    end;
  end loop;
  v_now := clock_timestamp();
  return json_build_object('now', floor(extract(epoch from v_now) * 1000),
    'candidates', coalesce(:OJS_UNIQUE_SCHEMA.candidates(p_fingerprint, p_states, v_now), '[]'::json));
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.record_job(
  p_job_id bigint, p_identifier text, p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_scheduled_at timestamptz, p_max_attempts int, p_ojs_priority int,
  p_request_token uuid, p_head boolean
) returns json
-- p_head: insert the record as its key's head (insert_head_job); on a conflict with another head
-- of the key (jobs_head_idx), insert nothing and return null.
-- plpgsql, not sql: a SQL-language function that cannot be inlined is planned again on every
-- call, which costs more than the insert itself. Generic plan: see
-- the header (a separate function from insert_job so that add_job stays outside the clause).
language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_now timestamptz := clock_timestamp();
  v_anchor timestamptz := case when p_policy ->> 'x_period_anchor' = 'scheduled_at' then p_scheduled_at else v_now end;
  v_row json;
begin
  -- Two statements, not one with a conditional ON CONFLICT: a plain insert is not speculative.
  if p_head then
    insert into :OJS_UNIQUE_SCHEMA.jobs as l (job_id, ojs_id, fingerprint, type, queue, meta, policy,
      created_at, expires_at, scheduled_at, max_attempts, priority, request_token, head)
    values (p_job_id, coalesce(p_ojs_id, p_job_id::text), p_fingerprint, p_identifier, p_queue, p_meta, p_policy,
      v_now,
      -- On the UTC calendar, as the core's addPeriod: timestamptz + interval would follow the
      -- session's time zone and make P1D 23 or 25 hours across a DST change. Measured from the
      -- policy's anchor (x_period_anchor): the due time, or creation (also for last_duplicate,
      -- which touch_jobs moves on).
      ((v_anchor at time zone 'UTC') + p_period) at time zone 'UTC',
      p_scheduled_at, p_max_attempts, p_ojs_priority, p_request_token, p_head)
    on conflict (fingerprint) where head do nothing
    returning json_build_object('job_id', l.job_id::text, 'id', l.ojs_id, 'created_at', l.created_at,
      'scheduled_at', l.scheduled_at, 'max_attempts', l.max_attempts) into v_row;
    if v_row is null then
      return null;
    end if;
    -- Any other record of the key was inserted under a head this insert would have met; should
    -- one show up all the same (its head reclaimed meanwhile), refuse rather than keep two.
    perform 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint and l.job_id <> p_job_id;
    if found then
      raise exception using errcode = 'serialization_failure',
        message = 'ojs-unique: a concurrent enqueue of the same key was seen late';
    end if;
  else
    insert into :OJS_UNIQUE_SCHEMA.jobs as l (job_id, ojs_id, fingerprint, type, queue, meta, policy,
      created_at, expires_at, scheduled_at, max_attempts, priority, request_token)
    values (p_job_id, coalesce(p_ojs_id, p_job_id::text), p_fingerprint, p_identifier, p_queue, p_meta, p_policy,
      v_now, ((v_anchor at time zone 'UTC') + p_period) at time zone 'UTC',
      p_scheduled_at, p_max_attempts, p_ojs_priority, p_request_token)
    returning json_build_object('job_id', l.job_id::text, 'id', l.ojs_id, 'created_at', l.created_at,
      'scheduled_at', l.scheduled_at, 'max_attempts', l.max_attempts) into v_row;
  end if;
  -- Retention (migration 0003): remember on the key's head row every (terminal state, period) a
  -- policy used on the key checks, so reclaim keeps a finished record as long as ANY of them can
  -- still count it. Here rather than in an AFTER INSERT trigger (migration 0004 says why); the
  -- test is a simple expression, so the usual policy (live states only) pays next to nothing.
  -- The key's lock is held (its head record), so no other enqueue of the key writes this row
  -- meanwhile; it is an upsert, not an update, as the `heads` row exists only once a policy
  -- needed it (or reclaim deleted an empty one), and it writes only when the policy adds
  -- something (`@>`).
  if p_fingerprint is not null and (p_policy -> 'states') ?| array['completed', 'cancelled', 'discarded'] then
    insert into :OJS_UNIQUE_SCHEMA.heads as h (fingerprint, retention)
    -- An entry is the period ("P1D"), prefixed with the policy's anchor when it has one
    -- ("scheduled_at P1D", "last_duplicate P1D"; retained_at reads both), or "forever".
    select p_fingerprint, jsonb_object_agg(s.state, jsonb_build_array(coalesce(
        (p_policy ->> 'x_period_anchor') || ' ' || (p_policy ->> 'period'), p_policy ->> 'period', 'forever')))
      from jsonb_array_elements_text(p_policy -> 'states') s(state)
      where s.state in ('completed', 'cancelled', 'discarded')
    on conflict (fingerprint) do update set retention = :OJS_UNIQUE_SCHEMA.merge_retention(h.retention, excluded.retention)
      where not h.retention @> excluded.retention;
  end if;
  return v_row;
end
$$;

-- insert_job returned a table until the generic-plan change; a return type cannot be changed by
-- CREATE OR REPLACE, so an install that still has that version drops it first (once).
do $$
begin
  if exists (select 1 from pg_catalog.pg_proc p
             where p.pronamespace = :OJS_UNIQUE_SCHEMA_NAME::regnamespace and p.proname = 'insert_job'
               and p.prorettype <> 'json'::regtype) then
    drop function :OJS_UNIQUE_SCHEMA.insert_job(text, json, text, timestamptz, int, int, text[], text, text, text,
      jsonb, jsonb, interval, int);
  end if;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.insert_job(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json
-- No plan_cache_mode clause here: add_job runs under the session's setting (see the header).
-- Both statements are plpgsql "simple expressions" (no FROM), evaluated without a plan per call.
language plpgsql volatile as $$
declare
  v_job :GRAPHILE_WORKER_SCHEMA._private_jobs;
begin
  -- job_key => null: the adapter never takes a job key, so Graphile's key-replace path, and its
  -- race between two adds of one key that can drop the job, are never entered.
  v_job := :GRAPHILE_WORKER_SCHEMA.add_job(
    identifier => p_identifier, payload => p_payload, queue_name => p_queue_name, run_at => p_run_at,
    max_attempts => p_max_attempts, job_key => null, priority => p_priority, flags => p_flags);
  return :OJS_UNIQUE_SCHEMA.record_job(v_job.id, p_identifier, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy,
    p_period, v_job.run_at, v_job.max_attempts, p_ojs_priority, p_request_token, false);
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.insert_head_job(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json
-- insert_job for a key with no record: the new record is the key's head, and its insert the
-- key's lock. Returns null, having written nothing that stays, when another enqueue's head of
-- the key came first (it waited for that one to commit): the caller locks that one instead.
-- No plan_cache_mode clause: add_job (see the header).
language plpgsql volatile as $$
declare
  v_job :GRAPHILE_WORKER_SCHEMA._private_jobs;
  v_row json;
begin
  v_job := :GRAPHILE_WORKER_SCHEMA.add_job(
    identifier => p_identifier, payload => p_payload, queue_name => p_queue_name, run_at => p_run_at,
    max_attempts => p_max_attempts, job_key => null, priority => p_priority, flags => p_flags);
  v_row := :OJS_UNIQUE_SCHEMA.record_job(v_job.id, p_identifier, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy,
    p_period, v_job.run_at, v_job.max_attempts, p_ojs_priority, p_request_token, true);
  if v_row is null then
    -- The job Graphile just added in this statement, by primary key; nobody else has seen it.
    -- Rarer than a subtransaction around the insert would be costly (one on every first job).
    delete from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = v_job.id;
  end if;
  return v_row;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.try_enqueue(
  p_fingerprint text, p_states text[],
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_request_token uuid
) returns json language plpgsql volatile as $$
declare
  v_candidates json;
  v_inserted json;
begin
  -- The two common cases in one round trip, without writing the spec's rules in SQL:
  --  1. The key has records: return them, unlocked and without writing anything, and let the
  --     caller decide in Node. A duplicate under reject or ignore is then answered from this
  --     committed snapshot (a correct answer as of the snapshot: nothing is written on that path,
  --     and every insert still happens under the key's lock), read-only, so it costs no commit
  --     flush. Any other decision takes the locked path (lock-and-read) to write.
  --  2. The key has no record the policy counts: take the key's lock, look again with a fresh
  --     snapshot and, still none, insert. When it has no record at all, the new record is the
  --     key's head and its insert takes the lock: one write beside Graphile's. With no
  --     candidate there is nothing to decide: decideConflict answers `insert` for an empty list
  --     whatever the policy.
  --
  -- No plan_cache_mode clause (it would reach add_job, see the header): every statement here is
  -- a simple expression; the functions it calls carry their own.
  v_candidates := :OJS_UNIQUE_SCHEMA.candidates(p_fingerprint, p_states, clock_timestamp());
  if v_candidates is null then
    -- The key has no record at all (the common case, a new key): the new record becomes its
    -- head, and its insert the lock. A record that appeared since this read is a head inserted
    -- meanwhile (a conflict: then the loop below locks it) or one whose head was reclaimed
    -- (record_job's late-record check refuses it).
    v_inserted := :OJS_UNIQUE_SCHEMA.insert_head_job(p_identifier, p_payload, p_queue_name,
      p_run_at, p_max_attempts, p_priority, p_flags, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy, p_period,
      p_ojs_priority, p_request_token);
    if v_inserted is not null then
      return json_build_object('inserted', v_inserted);
    end if;
    v_candidates := '[]'::json;
  end if;
  if json_array_length(v_candidates) = 0 then
    loop
      -- The head's lock is taken inside a block (a subtransaction) so that it can be given back:
      -- when candidates show up under the lock (the head's previous holder inserted them), they
      -- are returned unlocked, as in case 1, and the head is released first. Kept, it would stay
      -- held to the end of a caller's transaction (addJobWithClient), whose next step,
      -- lock-and-read, waits for Graphile rows: a head held while waiting for a Graphile row
      -- breaks the lock order (lock_and_read) and deadlocks with a worker's completion trigger
      -- or a concurrent replace. Reached by a key with records none the policy counts, or by a
      -- new key's enqueue that lost the race for its head.
      begin
        if :OJS_UNIQUE_SCHEMA.lock_head(p_fingerprint) then
          -- The key has records, none the policy counts as of the first read: look again under its lock.
          v_candidates := coalesce(:OJS_UNIQUE_SCHEMA.candidates(p_fingerprint, p_states, clock_timestamp()), '[]'::json);
          if json_array_length(v_candidates) = 0 then
            return json_build_object('inserted', :OJS_UNIQUE_SCHEMA.insert_job(p_identifier, p_payload, p_queue_name,
              p_run_at, p_max_attempts, p_priority, p_flags, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy, p_period,
              p_ojs_priority, p_request_token));
          end if;
          raise exception using errcode = 'OJSU1', message = 'ojs-unique: release the key''s head';
        end if;
      exception when sqlstate 'OJSU1' then
        return json_build_object('now', floor(extract(epoch from clock_timestamp()) * 1000), 'candidates', v_candidates);
      end;
      -- The key has no record at all: the new record becomes its head, its insert the lock.
      v_inserted := :OJS_UNIQUE_SCHEMA.insert_head_job(p_identifier, p_payload, p_queue_name,
        p_run_at, p_max_attempts, p_priority, p_flags, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy, p_period,
        p_ojs_priority, p_request_token);
      if v_inserted is not null then
        return json_build_object('inserted', v_inserted);
      end if;
      -- A concurrent enqueue inserted the key's head first (and committed): lock it, look again.
    end loop;
  end if;
  return json_build_object('now', floor(extract(epoch from clock_timestamp()) * 1000), 'candidates', v_candidates);
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.cancel_jobs(p_job_ids bigint[], p_replaced_by text, p_fence boolean)
returns table (job_id text, finished_at timestamptz, fenced boolean)
-- A function (it was a bare statement, cancel-jobs.sql) so that replace_jobs can run it in the
-- same round trip as the insert. Generic plan and no sequential scan: see the header.
language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
#variable_conflict use_column
begin
  return query
  -- A replace (p_replaced_by) supersedes every duplicate it met: a live one is labelled cancelled
  -- by the replacing job; a record that is already terminal (a policy checking
  -- completed/cancelled/discarded counts it) keeps its label, result and times, since a terminal
  -- state is never left. Each is marked superseded (released_fingerprint; candidates() says so,
  -- and the core never counts it while it is finished) and leaves the key (fingerprint null, as
  -- release_key does), so no later read of the key even scans it: the work of an enqueue never
  -- grows with the key's replaced history. All but the key's head record: it stays the key's
  -- lock (lock_head), so a replace never moves the lock, and costs a later read one row. Without a replacement (OJS CANCEL) only
  -- live jobs are cancelled, and they keep their key. One UPDATE per record: a row must not be
  -- updated twice in one statement.
  with target as (
    -- Live by the derived state: a job Graphile keeps after its last attempt failed is
    -- `discarded` (terminal) although its record has no label yet.
    select l.job_id,
      :OJS_UNIQUE_SCHEMA.derived_state(l.terminal_state, j.id is not null, j.locked_at, j.attempts, j.max_attempts,
        j.run_at, now()) not in ('completed', 'cancelled', 'discarded') as live,
      l.terminal_state is null and j.id is not null and j.locked_at is not null and j.locked_at > now() - interval '4 hours' as running
    from :OJS_UNIQUE_SCHEMA.jobs l
    left join :GRAPHILE_WORKER_SCHEMA._private_jobs j on j.id = l.job_id
    where l.job_id = any(p_job_ids) and (l.terminal_state is null or p_replaced_by is not null)
  ), labelled as (
    update :OJS_UNIQUE_SCHEMA.jobs l
    set terminal_state = case when target.live then 'cancelled' else l.terminal_state end,
      finished_at = case when target.live then clock_timestamp() else l.finished_at end,
      replaced_by = case when target.live then p_replaced_by else l.replaced_by end,
      released_fingerprint = case when p_replaced_by is not null then l.fingerprint else l.released_fingerprint end,
      fingerprint = case when p_replaced_by is not null and l.head is not true then null else l.fingerprint end
    from target
    where l.job_id = target.job_id and (not target.running or p_fence)
    returning l.job_id, l.finished_at, target.running, target.live
  ), removed as (
    delete from :GRAPHILE_WORKER_SCHEMA._private_jobs j
    using labelled
    where j.id = labelled.job_id and labelled.live and not labelled.running
    returning j.id
  ), fenced as (
    update :GRAPHILE_WORKER_SCHEMA._private_jobs j
    set attempts = j.max_attempts, key = null, updated_at = now()
    from labelled
    where j.id = labelled.job_id and labelled.live and labelled.running
    returning j.id
  )
  -- `removed` and `fenced` run although nothing reads them: PostgreSQL executes every
  -- data-modifying CTE exactly once.
  select labelled.job_id::text, labelled.finished_at, labelled.running as fenced from labelled;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.replace_jobs(
  p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz, p_max_attempts int,
  p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb,
  p_policy jsonb, p_period interval, p_ojs_priority int, p_cancel bigint[], p_fence boolean,
  p_request_token uuid
) returns json
-- The write half of a replace in one round trip (it was two: insert-job, then cancel-jobs):
-- insert the new job, then cancel the locked candidates naming it. Insert first: the cancelled
-- rows must name their replacement's id, which is Graphile's id unless the caller chose one.
-- No plan_cache_mode clause: insert_job calls add_job (see the header).
language plpgsql volatile as $$
declare
  v_job json;
begin
  v_job := :OJS_UNIQUE_SCHEMA.insert_job(p_identifier, p_payload, p_queue_name, p_run_at, p_max_attempts,
    p_priority, p_flags, p_ojs_id, p_fingerprint, p_queue, p_meta, p_policy, p_period, p_ojs_priority, p_request_token);
  return json_build_object('inserted', v_job, 'cancelled',
    (select coalesce(json_agg(c), '[]'::json)
     from :OJS_UNIQUE_SCHEMA.cancel_jobs(p_cancel, v_job ->> 'id', p_fence) c));
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.lock_job(p_ojs_id text)
returns table (job_id text, state text) language plpgsql volatile as $$
#variable_conflict use_column
declare
  v_job_id bigint;
  v_terminal text;
  v_job record;
begin
  select l.job_id into v_job_id from :OJS_UNIQUE_SCHEMA.jobs l where l.ojs_id = p_ojs_id;
  if not found then
    return;
  end if;
  -- Graphile's row first, then the ledger row: the order in which a worker's completion DELETE
  -- and its trigger take them, so the two can never wait on each other in a cycle.
  select j.id, j.locked_at, j.attempts, j.max_attempts, j.run_at into v_job
    from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = v_job_id for update;
  select l.terminal_state into v_terminal from :OJS_UNIQUE_SCHEMA.jobs l where l.job_id = v_job_id for update;
  return query select v_job_id::text,
    :OJS_UNIQUE_SCHEMA.derived_state(v_terminal, v_job.id is not null, v_job.locked_at, v_job.attempts,
      v_job.max_attempts, v_job.run_at, clock_timestamp());
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.job_deleted() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
begin
  -- Must never raise: an error here aborts the worker's completion DELETE, which nothing awaits,
  -- so Node dies of an unhandled rejection and the job re-runs 4 hours later.
  -- Losing one label is the lesser harm: a vanished row without a label reads as completed.
  begin
    update :OJS_UNIQUE_SCHEMA.jobs set
      terminal_state = case
        when old.locked_at is not null then 'completed'        -- the worker deletes its own locked row on success
        when old.attempts >= old.max_attempts then 'discarded' -- permafail clean-up
        else 'cancelled'                                        -- remove_job / complete_jobs on a job that never ran
      end,
      finished_at = clock_timestamp(),
      final_attempts = old.attempts
    where job_id = old.id and terminal_state is null;
  exception when others then
    raise warning 'ojs-unique: could not record the end of job % (%: %)', old.id, sqlstate, sqlerrm;
  end;
  return null;
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.retained_at(
  entries jsonb, created_at timestamptz, scheduled_at timestamptz, last_duplicate_at timestamptz, at timestamptz
) returns boolean language sql immutable as $$
  -- §7.4 with the x_period_anchor extension: a record is a duplicate while now < anchor + period,
  -- the anchor being the record's creation (the spec's), its due time ("scheduled_at P1D") or
  -- its last duplicate attempt, creation until one happened ("last_duplicate P1D"). "forever" is
  -- a policy without a period. `entries` is null when no policy on the key checks the state.
  select coalesce((
    select bool_or(case
      when e.entry = 'forever' then true
      else ((case split_part(e.entry, ' ', 1)
               when 'scheduled_at' then scheduled_at
               when 'last_duplicate' then greatest(created_at, last_duplicate_at)
               else created_at
             end at time zone 'UTC')
            + (case when position(' ' in e.entry) > 0 then split_part(e.entry, ' ', 2) else e.entry end)::interval)
           at time zone 'UTC' > at
    end)
    from jsonb_array_elements_text(entries) e(entry)), false)
$$;

create or replace function :OJS_UNIQUE_SCHEMA.touch_jobs(p_job_ids bigint[], p_period interval)
returns void language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_now timestamptz := clock_timestamp();
begin
  -- Under the key's lock, with the live candidates' Graphile rows locked first (lock_and_read):
  -- the lock order holds, and no completion trigger writes these records meanwhile.
  update :OJS_UNIQUE_SCHEMA.jobs l
  set last_duplicate_at = v_now,
      expires_at = greatest(l.expires_at, ((v_now at time zone 'UTC') + p_period) at time zone 'UTC')
  where l.job_id = any(p_job_ids);
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.update_job(
  p_job_id bigint, p_fields text[], p_payload json, p_meta jsonb, p_ojs_priority int, p_priority int,
  p_max_attempts int, p_run_at timestamptz
) returns json language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_job record;
  v_rec record;
  v_priority int := coalesce(p_priority, 0);
  -- The new job's defaults, as Graphile's add_job fills them.
  v_max_attempts int := coalesce(p_max_attempts, 25);
  v_run_at timestamptz := coalesce(p_run_at, now());
  v_changed text[] := '{}';
  v_field text;
begin
  -- Graphile's row, then the ledger's: the lock order (lock_and_read already holds the first).
  select j.payload, j.priority, j.max_attempts, j.run_at into v_job
    from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = p_job_id for update;
  if not found then
    raise exception using errcode = 'no_data_found', message = 'ojs-unique: the job to update has no Graphile row';
  end if;
  select l.meta, l.priority, l.policy into v_rec from :OJS_UNIQUE_SCHEMA.jobs l where l.job_id = p_job_id for update;
  foreach v_field in array p_fields loop
    if (v_field = 'args' and v_job.payload::jsonb is distinct from p_payload::jsonb)
       or (v_field = 'meta' and v_rec.meta is distinct from p_meta)
       or (v_field = 'priority' and (v_rec.priority <> p_ojs_priority or v_job.priority <> v_priority))
       or (v_field = 'max_attempts' and v_job.max_attempts <> v_max_attempts)
       -- In milliseconds, as OJS (and candidates()) read times: Graphile's now() has microseconds.
       or (v_field = 'scheduled_at'
           and floor(extract(epoch from v_job.run_at) * 1000) <> floor(extract(epoch from v_run_at) * 1000)) then
      v_changed := v_changed || v_field;
    end if;
  end loop;
  if cardinality(v_changed) = 0 then
    return json_build_object('changed', '[]'::json);
  end if;
  -- Run state (locked_at, locked_by, attempts, last_error) is never written: a running attempt
  -- goes on as it started and reads the new values only if it runs again.
  update :GRAPHILE_WORKER_SCHEMA._private_jobs j set
    payload = case when 'args' = any(v_changed) then p_payload else j.payload end,
    priority = case when 'priority' = any(v_changed) then v_priority else j.priority end,
    max_attempts = case when 'max_attempts' = any(v_changed) then v_max_attempts else j.max_attempts end,
    run_at = case when 'scheduled_at' = any(v_changed) then v_run_at else j.run_at end,
    revision = j.revision + 1,
    updated_at = now()
  where j.id = p_job_id;
  update :OJS_UNIQUE_SCHEMA.jobs l set
    meta = case when 'meta' = any(v_changed) then p_meta else l.meta end,
    priority = case when 'priority' = any(v_changed) then p_ojs_priority else l.priority end,
    max_attempts = case when 'max_attempts' = any(v_changed) then v_max_attempts else l.max_attempts end,
    scheduled_at = case when 'scheduled_at' = any(v_changed) then v_run_at else l.scheduled_at end,
    expires_at = case
      when 'scheduled_at' = any(v_changed) and l.policy ->> 'x_period_anchor' = 'scheduled_at'
        then ((v_run_at at time zone 'UTC') + (l.policy ->> 'period')::interval) at time zone 'UTC'
      else l.expires_at end
  where l.job_id = p_job_id;
  return json_build_object('changed', to_json(v_changed));
end
$$;

create or replace function :OJS_UNIQUE_SCHEMA.release_key(p_fingerprint text)
returns int language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_released int;
begin
  -- Nothing recorded under the key: nothing to release (and no lock to take).
  if not exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = p_fingerprint) then
    return 0;
  end if;
  -- The key's lock, in the lock order (Graphile rows of its live jobs, then its head record), so
  -- that no enqueue of the key is between its read and its write meanwhile. Raises 40001 when
  -- reclaim removed the key's records in between: the caller runs the transaction again.
  perform :OJS_UNIQUE_SCHEMA.lock_and_read(p_fingerprint, '{}'::text[]);
  -- Every record of the key, live or finished, leaves it: the next enqueue finds no record and
  -- inserts (its record becoming the key's new head). The jobs themselves are untouched: a live
  -- one runs as it would have, under no key.
  update :OJS_UNIQUE_SCHEMA.jobs l
  set released_fingerprint = l.fingerprint, fingerprint = null, head = null
  where l.fingerprint = p_fingerprint;
  get diagnostics v_released = row_count;
  -- Its retention memory served those records only.
  delete from :OJS_UNIQUE_SCHEMA.heads h where h.fingerprint = p_fingerprint;
  return v_released;
end
$$;
