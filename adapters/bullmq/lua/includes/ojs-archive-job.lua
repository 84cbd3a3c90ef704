--[[
  ojsArchiveJob(base, jobId, location, prevState, replacedBy, reason, nowMs, retentionMs, eventsKey, maxEvents, detach)

  Moves a job to OJS `cancelled`: takes it off BullMQ's list or set for
  `location` (as returned by ojsJobState), RENAMEs its hash to `<base>ojs:cancelled:<id>` with
  the OJS fields added, deletes its other keys, and XADDs `removed` with the reason.
  The archive is invisible to BullMQ's getters, counts and dashboards (they only read BullMQ's
  state sets); moving the job to `failed` instead was rejected: it would count as a failure, be
  trimmed by removeOnFail, and a dashboard "retry" would bring it back.
  The archive's expiry comes from the job's OWN policy (includes/ojs-own-policy), never from the
  add that cancels it: a policy with `cancelled` in its states must keep counting the job for its
  whole window. retentionMs (the configured retention; 0 = for ever) applies otherwise, and
  always to a replaced job (replacedBy): superseded, it counts for no policy again.
  An active job's lock is deleted with it: the worker still running it then fails to finish it
  (BullMQ reports a missing job key), so its outcome is never recorded.
  Only a live job is archived: a terminal state is never left (a replace leaves a finished
  duplicate as it is; cancel-job refuses a finished job).
  A job that is a flow child its parent still waits for is first taken out of the parent's
  dependencies by `detach` (includes/ojs-detach-child), as removing a child does in BullMQ: the
  parent runs without it once nothing else is pending.
  Returns the deduplication id when BullMQ's deduplication key named the job (deleted with it),
  else nil.
  Cannot fail: every branch acts on a key the caller has just seen exist in this script (a
  RENAME of a missing key was the one way it could, and the archive branch never renames).
]]
--- @include "includes/ojs-archive-key"
local function ojsArchiveJob(base, jobId, location, prevState, replacedBy, reason, nowMs, retentionMs, eventsKey, maxEvents, detach)
  if location == "wait" then
    if rcall("LREM", base .. "wait", 1, jobId) == 0 then rcall("LREM", base .. "paused", 1, jobId) end
  elseif location == "prioritized" or location == "delayed" or location == "waiting-children" then
    rcall("ZREM", base .. location, jobId)
  elseif location == "active" then
    rcall("LREM", base .. "active", 1, jobId)
  end
  local jobKey = base .. jobId
  local archiveKey = ojsArchiveKey(base, jobId)
  local own = rcall("HMGET", jobKey, "ojsOwn", "timestamp", "delay", "ojsLast", "ojsPeriod", "deid")
  local ownEnd = own[1]
  -- An anchored window (x_period_anchor) ends where its anchor is now, not where it was at insert.
  if ownEnd and ownEnd ~= "" and own[5] then
    ownEnd = string.format("%.0f", math.max(tonumber(ownEnd), ojsAnchorEnd(own[2], own[3], own[4], own[5], nowMs)))
  end
  if replacedBy ~= nil and replacedBy ~= "" then ownEnd = false end
  local ttlMs = ojsArchiveTtlMs(ownEnd, retentionMs, nowMs)
  detach(jobKey, nowMs)
  -- BullMQ's deduplication key naming the job goes with it, as BullMQ's removeJob does: the
  -- native path's key (includes/ojs-native-add), or the caller's own deduplication.
  local heldKey = nil
  if own[6] and rcall("GET", base .. "de:" .. own[6]) == jobId then
    rcall("DEL", base .. "de:" .. own[6])
    heldKey = own[6]
  end
  rcall("RENAME", jobKey, archiveKey)
  rcall("HSET", archiveKey, "ojsState", "cancelled", "ojsPrevState", prevState, "ojsCancelledOn", nowMs,
    "ojsReplacedBy", replacedBy or "")
  if ttlMs > 0 then rcall("PEXPIRE", archiveKey, ttlMs) end
  bullmqDeleteJobSubkeys(jobKey)
  bullmqEmitRemoved(eventsKey, maxEvents, jobId, location, reason, replacedBy or "")
  return heldKey
end
