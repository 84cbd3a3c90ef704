--[[
  ojsAnswerDuplicate(action, existing, eventsKey, metaKey, uniquenessKey, incomingId, nowMs) -> reply

  The answer to an add that inserts nothing (action "ignore", "reject" or "reject_active"):
  XADD `deduplicated` on the adding queue's stream (BullMQ's own event name and fields: jobId =
  the existing job, deduplicationId = "ojs:<key>", deduplicatedJobId = the incoming id, "" for
  a counter id), trimmed like BullMQ's own events (opts.maxLenEvents), then
    { "ignored", existingId, existingState, existingQueue, nowMs, existingHash }
    { "duplicate" | "active", existingId, existingState, existingQueue, nowMs }
  Only `ignore` hands the existing job back to the caller, so only it reads the job's hash.
  Shared by unique-add and unique-probe: one reply, one event, whichever script decided.
]]
local function ojsAnswerDuplicate(action, existing, eventsKey, metaKey, uniquenessKey, incomingId, nowMs)
  bullmqEmitDeduplicated(eventsKey, bullmqMaxEvents(metaKey), existing.id, "ojs:" .. uniquenessKey, incomingId)
  if action ~= "ignore" then
    return { (action == "reject" and "duplicate") or "active", existing.id, existing.state, existing.queue, nowMs }
  end
  return { "ignored", existing.id, existing.state, existing.queue, nowMs,
    ojsReadJob(existing.base, existing.id, existing.location) }
end
