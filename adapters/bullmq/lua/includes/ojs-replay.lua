--[[
  Idempotent adds. Every unique add carries a request token made by the client (ARGV), stored on
  the job it inserts as `ojsReq`. ioredis re-sends a command whose reply was lost to a reconnect,
  so the same add can run twice; the second run finds its own token and answers what the first
  did, writing nothing.

  ojsOwnJob(base, jobId, request) -> location ("live" | "archive") of the job or archive under
  `jobId` when the add with token `request` inserted it, else nil. For a caller-chosen id.

  ojsReplay(rootPrefix, base, jobId, location) -> the first run's reply, rebuilt from the job:
    { "created", jobId, createdMs [, deduplicationId] }   (the native path's job: its `deid`)
    { "replaced", jobId, createdMs, { { id, queue, state, hash }, … } }
  A replace stores the jobs it superseded on the new job (`ojsReplaced`, JSON array of
  "<queue>:<id>", written only by a replace), so the replay names the same ones: a cancelled one
  from its archive, a finished one it left as it was from its hash. createdMs is the job's
  `timestamp`, the first run's Redis TIME.
]]
--- @include "includes/ojs-archive-key"
local function ojsOwnJob(base, jobId, request)
  if rcall("HGET", base .. jobId, "ojsReq") == request then return "live" end
  if rcall("HGET", ojsArchiveKey(base, jobId), "ojsReq") == request then return "archive" end
  return nil
end

local function ojsReplay(rootPrefix, base, jobId, location)
  local key = (location == "archive" and (ojsArchiveKey(base, jobId))) or (base .. jobId)
  local fields = rcall("HMGET", key, "timestamp", "ojsReplaced", "deid")
  local createdMs = tonumber(fields[1])
  if not fields[2] then return { "created", jobId, createdMs, fields[3] or nil } end
  local replaced = {}
  for _, member in ipairs(cjson.decode(fields[2])) do
    local queueName, replacedId, replacedBase = ojsSplitMember(rootPrefix, member)
    local archived = rcall("HGETALL", ojsArchiveKey(replacedBase, replacedId))
    if #archived > 0 then
      replaced[#replaced + 1] = { replacedId, queueName, "cancelled", archived }
    else
      -- A finished one left as it was; with neither its hash nor an archive left (removed, or a
      -- retention shorter than the grace), it was most likely cancelled, as before this rule.
      local state = ojsJobState(replacedBase, replacedId, 0)
      replaced[#replaced + 1] = { replacedId, queueName, state or "cancelled", rcall("HGETALL", replacedBase .. replacedId) }
    end
  end
  return { "replaced", jobId, createdMs, replaced }
end
