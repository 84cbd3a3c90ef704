-- gateway-workflow-create: stores a new OJS gateway workflow record (version 1) and the link from
-- each of its job ids to it (gateway-migration-0001-schema.sql, gateway_workflows), in one statement.
--
-- $1 text    the workflow id
-- $2 jsonb   the record
-- $3 text[]  every job id the workflow gives (steps, jobs, callbacks)
-- Returns: nothing. SQLSTATEs: 23505 (unique_violation) for a taken workflow or job id. One statement.
with workflow as (
  insert into :OJS_UNIQUE_SCHEMA.gateway_workflows (id, version, record) values ($1::text, 1, $2::jsonb)
)
insert into :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs (job_id, workflow_id)
select job_id, $1::text from unnest($3::text[]) as job_id;
