--[[
  ojsSuccessorPromote(base, holderId, nowMs) -> the promoted job's id, or nil (no pending successor)

  x_successor: adds the pending successor of `holderId` (includes/ojs-successor) as a job now, as
  BullMQ's finishing script does when a holder completes or fails for good
  (requeueDeduplicatedJob), for the ends that script never sees: an OJS cancel (cancel-job). Its
  stored name, data, options and id go through BullMQ's own add (includes/ojs-bullmq-add: the
  including script splices the add scripts), `timestamp` = now (created_at: promotion time). Its
  deduplication options are taken out of the add (BullMQ's add would deduplicate on them) and set
  afterwards as BullMQ's promotion sets them: `deid` on the job, the key naming it, no expiry. Its
  OJS fields stay in its options, adopted by the next observe of its key.
  The unpacked BullMQ arguments of the add that stored it (`ojsArgs`) give BullMQ's encoding of
  everything but the id and timestamp.
]]
--- @include "includes/ojs-successor-id"
local function ojsSuccessorPromote(base, holderId, nowMs)
  local nextKey = base .. "dn:" .. OJS_SUCCESSOR_DEID .. holderId
  local stored = rcall("HMGET", nextKey, "data", "opts", "jid", "ojsArgs")
  if not stored[3] or not stored[4] then return nil end
  local opts = cjson.decode(stored[2])
  local deid = opts["de"] and opts["de"]["id"]
  opts["de"] = nil
  local args = cmsgpack.unpack(stored[4])
  args[BULLMQ_ARG_KEY_PREFIX] = base
  args[BULLMQ_ARG_CUSTOM_ID] = stored[3]
  args[BULLMQ_ARG_TIMESTAMP] = nowMs
  local K = { base .. "wait", base .. "paused", base .. "meta", base .. "id", base .. "completed", base .. "delayed",
    base .. "active", base .. "events", base .. "marker", base .. "prioritized", base .. "pc" }
  local result = ojsBullMQAdd(K, { args, stored[1], opts }, tonumber(opts[BULLMQ_OPT_DELAY]) or 0,
    tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0)
  if type(result) == "number" and result < 0 then return nil end
  local jobId = tostring(result)
  if deid then
    rcall("HSET", base .. jobId, "deid", deid)
    rcall("SET", base .. "de:" .. deid, jobId)
  end
  rcall("DEL", nextKey)
  rcall("HDEL", base .. "ojs:successors", jobId)
  return jobId
end
