-- gateway-workflow-write: writes an OJS gateway workflow record if no other write came since it
-- was read: a compare-and-swap on its version (gateway_workflows), so that two gateway processes
-- advancing one workflow each see the other's change.
--
-- $1 text     the workflow id
-- $2 integer  the version the writer read
-- $3 jsonb    the new record
-- Returns: one row (version) when written, none when another write came first. SQLSTATEs: none
-- of its own. One statement (the row lock of the update orders concurrent writers).
update :OJS_UNIQUE_SCHEMA.gateway_workflows
   set record = $3::jsonb, version = version + 1
 where id = $1::text and version = $2::integer
returning version;
