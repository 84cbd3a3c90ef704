-- gateway-workflow-of-job: the OJS gateway workflow a job belongs to (gateway_workflow_jobs), with
-- its version: what an ack or nack reads first. No row for a job outside any workflow, or of
-- an ended workflow past its retention.
--
-- $1 text  the job's OJS id
-- Returns: zero or one row: version (integer), record (jsonb). SQLSTATEs: none of its own.
select w.version, w.record
  from :OJS_UNIQUE_SCHEMA.gateway_workflow_jobs j
  join :OJS_UNIQUE_SCHEMA.gateway_workflows w on w.id = j.workflow_id
 where j.job_id = $1::text and (w.expires_at is null or w.expires_at > now());
