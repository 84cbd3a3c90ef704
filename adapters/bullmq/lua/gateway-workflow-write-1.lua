--[[
  gateway-workflow-write: writes an OJS gateway workflow record (server/bullmq-workflow-records.ts)
  if no other write came since it was read: a compare-and-swap on the record's version, so that
  two gateway processes advancing one workflow each see the other's change. Not used by the
  adapter itself.

  Input:
    KEYS[1]  the workflow's record, a hash (<prefix>:ojs-gateway:workflow:<id>): record, version
    ARGV[1]  the version the writer read
    ARGV[2]  the new record (JSON text)
    ARGV[3]  how long to keep the record from now, in ms (a workflow that ended); 0: no expiry

  Steps:
    1. Nothing, unless the record exists at version ARGV[1].
    2. Write the record at the next version; expire it after ARGV[3] when given.

  Output: 1 written, 0 not (another write came first, or no record).

  All-or-nothing: one HSET after reads only.
]]
local rcall = redis.call

local version = rcall("HGET", KEYS[1], "version")
if not version or version ~= ARGV[1] then return 0 end
rcall("HSET", KEYS[1], "record", ARGV[2], "version", tostring(tonumber(version) + 1))
if tonumber(ARGV[3]) > 0 then rcall("PEXPIRE", KEYS[1], ARGV[3]) end
return 1
