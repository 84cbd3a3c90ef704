-- lock-job: locks one job for a state change (OJS CANCEL) and reports its current state.
-- Must run inside the caller's transaction.
--
-- $1 text   OJS id
-- Steps: 1. lock the ledger row (FOR UPDATE); 2. lock the Graphile row if it still exists
--        (workers fetch with SKIP LOCKED, so the job cannot start while we hold it);
--        3. derive the state after both locks.
-- Returns: zero rows (unknown id) or one row: job_id (text), state.
-- SQLSTATEs: none of its own.
with ledger as (
  select l.job_id, l.terminal_state from :OJS_UNIQUE_SCHEMA.jobs l where l.ojs_id = $1::text for update
), graphile as (
  select j.id, j.locked_at, j.attempts, j.max_attempts, j.run_at
  from :GRAPHILE_WORKER_SCHEMA._private_jobs j where j.id = (select job_id from ledger) for update
)
select ledger.job_id::text,
  :OJS_UNIQUE_SCHEMA.derived_state(ledger.terminal_state, graphile.id is not null, graphile.locked_at,
    graphile.attempts, graphile.max_attempts, graphile.run_at, clock_timestamp()) as state
from ledger left join graphile on true;
