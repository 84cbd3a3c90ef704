-- lock_and_read: the key's lock, taken in the lock order, then its candidates: the read of an
-- enqueue that writes beside existing records.
--
-- Parameters: p_fingerprint text, p_states text[] (as candidates).
-- Steps (docs/design/graphile-worker.md, "Lock order"): 1. lock the Graphile rows of the key's
--   live records, waiting; 2. lock_head, waiting; 3. lock NOWAIT the Graphile rows of records
--   that turned live meanwhile; one busy, the block rolls back (releasing the head) and the loop
--   starts again at 1; 4. candidates at clock_timestamp().
-- Returns: json {now (epoch ms), candidates (as candidates(), '[]' for none)}.
-- Raises: 40001 when the key's records vanished (reclaim) since the caller's unlocked read: retry
--   from that read; 55P03 under the session's lock_timeout.
-- All-or-nothing: writes nothing but lock_head's promotion of a head record.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
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
