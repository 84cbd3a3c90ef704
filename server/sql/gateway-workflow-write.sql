-- gateway-workflow-write: writes an OJS gateway workflow record if no other write came since it
-- was read: a compare-and-swap on its version (gateway_workflows), so that two gateway processes
-- advancing one workflow each see the other's change.
--
-- $1 text     the workflow id
-- $2 integer  the version the writer read
-- $3 jsonb    the new record
-- $4 integer  null while the workflow runs; once it ended, how long to keep it from now, in ms
-- $5 boolean  nothing of the workflow can still end: its job links are deleted with the write
-- Steps: 1. The record, when still at version $2 and not expired, at the next version, its expiry set.
--        2. With $5, and only when 1 wrote, the links from its job ids.
-- Returns: one row (version) when written, none when another write came first. SQLSTATEs: none
-- of its own. One statement (the row lock of the update orders concurrent writers).
with written as (
  update :OJS_UNIQUE_SCHEMA.gateway_workflows
     set record = $3::jsonb, version = version + 1,
         expires_at = now() + $4::integer * interval '1 millisecond'
   where id = $1::text and version = $2::integer and (expires_at is null or expires_at > now())
  returning version
), unlinked as (
  delete from :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs
   where $5::boolean and workflow_id = $1::text and exists (select 1 from written)
)
select version from written;
