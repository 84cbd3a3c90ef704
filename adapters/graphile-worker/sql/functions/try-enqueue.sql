-- try_enqueue: the one-round-trip unique enqueue (try-enqueue.sql).
--
-- Parameters: p_fingerprint text, p_states text[] (as candidates), then insert_job's but
--   p_fingerprint: p_identifier … p_request_token.
-- Steps: 1. candidates, unlocked; some: return them, writing nothing;
--        2. no record at all: insert_head_job; it lost the race for the head: as 3;
--        3. records, none counted: in a block, lock_head and read again; still none: insert_job;
--           some now: give the head back (OJSU1 rolls the block back) and return them unlocked.
-- Returns: json {inserted: record_job's result}, or {now (epoch ms), candidates} read without
--   the key's lock: enough to answer reject or ignore; a caller that writes locks with
--   lock_and_read.
-- Raises: as candidates, lock_head and insert_job (40001, 23505 on the OJS id); OJSU1 is its own
--   and never escapes.
-- All-or-nothing: one statement; nothing written on the candidates path.
-- Plans: no SET clause (add_job: docs/design/graphile-worker.md, "Query plans"); the functions
--   it calls carry their own.
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
  -- No plan_cache_mode clause (it would reach add_job): every statement here is
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
