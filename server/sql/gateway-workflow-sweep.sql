-- gateway-workflow-sweep: deletes ended OJS gateway workflows whose retention passed
-- (gateway_workflows.expires_at), the oldest first, with their job links. Run now and then by a
-- gateway (lazily, beside a create): an expired record already reads as absent, so this only
-- bounds the tables.
--
-- $1 integer  at most this many workflows
-- Steps: 1. Workflows whose expiry passed, by gateway_workflows_expires_idx, skipping rows another
--           session holds (a write, another sweep).
--        2. Their links (gateway_workflow_jobs_workflow_idx), then the workflows.
-- Returns: the number of workflows deleted (swept). SQLSTATEs: none of its own. One statement.
with doomed as (
  select id from :OJS_UNIQUE_SCHEMA.gateway_workflows
   where expires_at <= now()
   order by expires_at
   limit $1::integer
     for update skip locked
), unlinked as (
  delete from :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs where workflow_id in (select id from doomed)
), swept as (
  delete from :OJS_UNIQUE_SCHEMA.gateway_workflows where id in (select id from doomed)
  returning 1
)
select count(*)::integer as swept from swept;
