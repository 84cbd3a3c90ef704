-- gateway-workflow-read: an OJS gateway workflow record and its version (gateway_workflows); an
-- ended workflow past its retention reads as absent.
--
-- $1 text  the workflow id
-- Returns: zero or one row: version (integer), record (jsonb). SQLSTATEs: none of its own.
select version, record from :OJS_UNIQUE_SCHEMA.gateway_workflows
 where id = $1::text and (expires_at is null or expires_at > now());
