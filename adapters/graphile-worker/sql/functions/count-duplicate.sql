-- count_duplicate: duplicate counts (docs/decisions.md, "Duplicate counts"): the job an enqueue
-- met and left holding its key (ignore, reject, x_update) counts the enqueue.
--
-- Parameters: p_job_id bigint (the job's Graphile id); p_request_token uuid (the enqueue's token:
--   the same enqueue run again, after a lost reply or a retried transaction, is not counted again);
--   p_own_statement boolean: true when the statement is its own transaction (the adapter's
--   read-only duplicate path, in autocommit), whose commit then does not wait for the WAL flush.
-- Steps: 1. with p_own_statement, synchronous_commit off for this transaction only: a duplicate's
--           answer does not wait for a disk flush for its count (a crash may lose the last
--           fraction of a second of counts, never anything else: the statement writes nothing else);
--        2. one upsert of the job's duplicate_counts row: count + 1, last_at = clock_timestamp(),
--           request = the token; skipped when the row already carries this token.
-- Returns: json {duplicate_count, last_duplicate_at (epoch ms, database clock)}: the job's count
--   after this enqueue (as it was, when this token was counted already).
-- Raises: nothing of its own. All-or-nothing: one statement.
-- Locks: only the counter's row, never the ledger's (its head record is the key's lock), so a
--   count taken on the read-only path never waits for, nor holds, a key's lock.
-- Plans: generic plan, no sequential scan (docs/design/graphile-worker.md, "Query plans").
create or replace function :OJS_UNIQUE_SCHEMA.count_duplicate(p_job_id bigint, p_request_token uuid, p_own_statement boolean)
returns json language plpgsql volatile set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
declare
  v_counted json;
begin
  if p_own_statement then
    perform set_config('synchronous_commit', 'off', true);
  end if;
  insert into :OJS_UNIQUE_SCHEMA.duplicate_counts as c (job_id, duplicate_count, last_at, request_token)
  values (p_job_id, 1, clock_timestamp(), p_request_token)
  on conflict (job_id) do update
    set duplicate_count = c.duplicate_count + 1, last_at = excluded.last_at, request_token = excluded.request_token
    where c.request_token is distinct from excluded.request_token
  returning json_build_object('duplicate_count', c.duplicate_count,
    'last_duplicate_at', floor(extract(epoch from c.last_at) * 1000)) into v_counted;
  if v_counted is null then
    select json_build_object('duplicate_count', c.duplicate_count,
      'last_duplicate_at', floor(extract(epoch from c.last_at) * 1000)) into v_counted
    from :OJS_UNIQUE_SCHEMA.duplicate_counts c where c.job_id = p_job_id;
  end if;
  return v_counted;
end
$$;
