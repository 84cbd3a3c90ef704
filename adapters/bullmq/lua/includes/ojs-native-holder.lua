--[[
  ojsNativeHolder(queueBase, field, uniquenessKey, nowMs, withDup) -> holder, state, location, request, dup

  The native path's job of a key (includes/ojs-native-add): the job BullMQ's deduplication key
  `<base>de:<field>` names, when its hash carries this key (`ojsKey`) and no `finishedOn`; nil
  otherwise (no key, or a stale one: its job gone, finished, or of another key sharing the
  field). With its OJS state (ojsUnfinishedJobState: `finishedOn` absent, it is neither completed
  nor failed for good), the token of the add that inserted it (`ojsReq`, false when none) and,
  with withDup (duplicate counts on), its duplicate count (`ojsDup`, includes/ojs-count-duplicate;
  false when none; nil without withDup).
  Shared by unique-add's native path and unique-probe's, so both answer from the same reads.
]]
local function ojsNativeHolder(queueBase, field, uniquenessKey, nowMs, withDup)
  local holder = rcall("GET", queueBase .. "de:" .. field)
  if not holder then return nil end
  local own
  if withDup then
    own = rcall("HMGET", queueBase .. holder, "ojsKey", "ojsReq", BULLMQ_FINISHED_ON, "ojsDup")
  else
    own = rcall("HMGET", queueBase .. holder, "ojsKey", "ojsReq", BULLMQ_FINISHED_ON)
  end
  if own[1] ~= uniquenessKey or own[3] then return nil end
  local state, location = ojsUnfinishedJobState(queueBase, holder, nowMs)
  return holder, state, location, own[2], own[4]
end
