--[[
  ojsAnswerDuplicate(action, existing, eventsKey, metaKey, uniquenessKey, incomingId, nowMs, request) -> reply

  The answer to an add that inserts nothing (action "ignore", "reject" or "reject_active"):
  XADD `deduplicated` on the adding queue's stream (BullMQ's own event name and fields: jobId =
  the existing job, deduplicationId = "ojs:<key>", deduplicatedJobId = the incoming id, "" for
  a counter id), trimmed like BullMQ's own events (opts.maxLenEvents), then
    { "ignored", existingId, existingState, existingQueue, nowMs, existingHash }
    { "duplicate" | "active", existingId, existingState, existingQueue, nowMs }
  Only `ignore` hands the existing job back to the caller, so only it reads the job's hash.
  Every answer counts the add on the existing job (includes/ojs-count-duplicate; request: the
  add's token, "" for none; nil: not counted: counting is off (the `countDuplicates` option,
  unique-add's ARGV[23]), or the refusal of a flow's check pass).
  Shared by unique-add and unique-probe: one reply, one event, whichever script decided.
]]
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-count-duplicate"
local function ojsAnswerDuplicate(action, existing, eventsKey, metaKey, uniquenessKey, incomingId, nowMs, request)
  bullmqEmitDeduplicated(eventsKey, bullmqMaxEvents(metaKey), existing.id, "ojs:" .. uniquenessKey, incomingId)
  local hashKey = request ~= nil
    and ((existing.location == "archive" and ojsArchiveKey(existing.base, existing.id)) or (existing.base .. existing.id))
  if action ~= "ignore" then
    if hashKey then ojsCountDuplicate(hashKey, request, nowMs, nil, existing.dup) end
    return { (action == "reject" and "duplicate") or "active", existing.id, existing.state, existing.queue, nowMs }
  end
  local job = ojsReadJob(existing.base, existing.id, existing.location)
  if hashKey then job = ojsCountDuplicate(hashKey, request, nowMs, job, nil) end
  return { "ignored", existing.id, existing.state, existing.queue, nowMs, job }
end
