--[[
  ojsJobState(base, jobId, nowMs) -> ojsState, location, dueMs

  The OJS state of a BullMQ job, derived from BullMQ's own keys in O(1) (plus O(active) in one
  rare case), never scanning `wait`:
    job hash missing, archive present  -> cancelled   (location "archive")
    job hash missing, no archive       -> nil         (location "gone": removed, e.g. by removeOnComplete)
    in completed                       -> completed
    in failed                          -> discarded   (6.x `failed` holds final failures only)
    in delayed, due time passed        -> available   (due; a worker promotes it on its next poll)
    in delayed, attempts made > 0      -> retryable   (backoff wait after a failed attempt)
    in delayed                         -> scheduled
    in prioritized                     -> available
    in waiting-children                -> pending
    lock key present, or in active     -> active
    otherwise                          -> available   (in `wait` or the legacy `paused` list)
  `base` is the queue's key prefix with its trailing colon ("bull:emails:"). dueMs is set for
  delayed jobs only (bullmqDelayedDueMs). ojsLiveJobState is the
  same once the job hash is known to exist; ojsUnfinishedJobState once it is also known to have
  no `finishedOn` (BULLMQ_FINISHED_ON: present exactly while the job is completed or failed for
  good), which spares the two finished sets' ZSCOREs.

  ojsIndexedJobState(base, jobId, uniquenessKey, nowMs, withDup) -> ojsState, location, dueMs, request, dup, promoted
  The same for an index entry (includes/ojs-index), which names a job by id only: an id can be
  reused once its job is removed (a plain add with that jobId, say), so the entry's job is the
  hash under that id only if the hash still carries the entry's uniqueness key (ojsKey).
  Anything else is nil: "other" when the hash (or archive) carries another key with the same
  first 32 hex digits (the entry is that key's: keep it), "gone" otherwise (the indexed job no
  longer exists). Also returns the request token of the add that inserted it (`ojsReq`, false
  when none) and, with withDup (duplicate counts on), its duplicate count (`ojsDup`,
  includes/ojs-count-duplicate; false when none), read in the same HMGET; nil without withDup.
  x_successor: a job BullMQ promoted from a pending successor carries its OJS fields in its
  options until a writer adopts it (includes/ojs-successor): it is the key's job when those name
  the key, and the 6th value is them (nil otherwise).
]]
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-successor-id"
local function ojsUnfinishedJobState(base, jobId, nowMs)
  local jobKey = base .. jobId
  local score = rcall("ZSCORE", base .. "delayed", jobId)
  if score then
    local due = bullmqDelayedDueMs(score)
    if due <= nowMs then return "available", "delayed", due end
    local attemptsMade = tonumber(rcall("HGET", jobKey, BULLMQ_ATTEMPTS_MADE) or "0") or 0
    if attemptsMade > 0 then return "retryable", "delayed", due end
    return "scheduled", "delayed", due
  end
  if rcall("ZSCORE", base .. "prioritized", jobId) then return "available", "prioritized", nil end
  if rcall("ZSCORE", base .. "waiting-children", jobId) then return "pending", "waiting-children", nil end
  -- No lock does not prove "not active" (a stalled job whose lock expired), hence the LPOS,
  -- which is O(active): bounded by the workers' total concurrency, not by queue depth.
  if rcall("EXISTS", jobKey .. BULLMQ_LOCK_SUFFIX) == 1 then return "active", "active", nil end
  if rcall("LPOS", base .. "active", jobId) then return "active", "active", nil end
  return "available", "wait", nil
end

local function ojsLiveJobState(base, jobId, nowMs)
  if rcall("ZSCORE", base .. "completed", jobId) then return "completed", "completed", nil end
  if rcall("ZSCORE", base .. "failed", jobId) then return "discarded", "failed", nil end
  return ojsUnfinishedJobState(base, jobId, nowMs)
end

local function ojsJobState(base, jobId, nowMs)
  if rcall("EXISTS", base .. jobId) == 0 then
    if rcall("EXISTS", ojsArchiveKey(base, jobId)) == 1 then
      return "cancelled", "archive", nil
    end
    return nil, "gone", nil
  end
  return ojsLiveJobState(base, jobId, nowMs)
end

-- The fields of a job hash (or archive) ojsIndexedJobState reads: `ojsDup` only when counting.
local function ojsIndexedFields(hashKey, withDup)
  if withDup then return rcall("HMGET", hashKey, "ojsKey", "ojsReq", "ojsDup") end
  return rcall("HMGET", hashKey, "ojsKey", "ojsReq")
end

local function ojsIndexedJobState(base, jobId, uniquenessKey, nowMs, withDup)
  local own = ojsIndexedFields(base .. jobId, withDup)
  if own[1] == uniquenessKey then
    local state, location, due = ojsLiveJobState(base, jobId, nowMs)
    return state, location, due, own[2], own[3]
  end
  if not own[1] then
    local ojs = ojsSuccessorOjs(base .. jobId)
    if ojs ~= nil and ojs.key == uniquenessKey then
      local state, location, due = ojsLiveJobState(base, jobId, nowMs)
      return state, location, due, (ojs.req ~= nil and ojs.req ~= "" and ojs.req) or false, own[3], ojs
    end
  end
  local field = string.sub(uniquenessKey, 1, 32)
  local other = own[1] and string.sub(own[1], 1, 32) == field
  own = ojsIndexedFields(ojsArchiveKey(base, jobId), withDup)
  if own[1] == uniquenessKey then return "cancelled", "archive", nil, own[2], own[3] end
  if other or (own[1] and string.sub(own[1], 1, 32) == field) then return nil, "other", nil end
  return nil, "gone", nil
end
