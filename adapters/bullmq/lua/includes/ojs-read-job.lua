--[[
  ojsReadJob(base, jobId, location) -> the job's hash as a flat array (HGETALL), read from the
  archive for a cancelled job. The caller builds the BullMQ Job / OJS view from it, so that an
  outcome never needs a second round trip.
]]
--- @include "includes/ojs-archive-key"
local function ojsReadJob(base, jobId, location)
  if location == "archive" then return rcall("HGETALL", ojsArchiveKey(base, jobId)) end
  return rcall("HGETALL", base .. jobId)
end
