--[[
  ojsObserve(fingerprintKey, rootPrefix, uniquenessKey, policy, nowMs, request) -> candidates, drops, own

  Every job of the fingerprint set with its OJS state, as candidates for ojsDecideConflict:
  { id, queue, base, state, location, created, seq, due }. The score is the insert's Redis TIME
  in µs: created_at = floor(score / 1000), and the score itself is the insertion order (`seq`).

  Reads only; writes nothing. `drops` lists the members no decision can need again: their job is
  gone (or the id now holds another job), or the job is finished and neither the policy it was
  added with (includes/ojs-own-policy) nor this add's counts it. Dropping by this add's policy
  alone would make a later, wider policy forget a finished job it still counts. A live job is
  never dropped. unique-add removes them (lazy reclaim, O(entries of this fingerprint), never
  O(queue depth)) once all its checks have passed; unique-probe ignores them. Leaving them out of
  `candidates` changes no decision: an entry this policy does not count is never a duplicate.

  `own`: when `request` is not "" and a job of the set (live or archived, whatever its state)
  was inserted by the add carrying that token (`ojsReq`), { id, queue, base, location } of it:
  this add is a re-execution (see unique-add, "Idempotent").
]]
local function ojsObserve(fingerprintKey, rootPrefix, uniquenessKey, policy, nowMs, request)
  local candidates, drops, own = {}, {}, nil
  local entries = rcall("ZRANGE", fingerprintKey, 0, -1, "WITHSCORES")
  for i = 1, #entries, 2 do
    local member = entries[i]
    local candidateQueue, jobId, base = ojsSplitMember(rootPrefix, member)
    local seq = tonumber(entries[i + 1])
    local created = math.floor(seq / 1000)
    local state, location, due, ownStates, ownPeriodEnd, madeBy = ojsIndexedJobState(base, jobId, uniquenessKey, nowMs)
    if state ~= nil and request ~= "" and madeBy == request then
      own = { id = jobId, queue = candidateQueue, base = base, location = location }
    end
    local terminal = state == "completed" or state == "discarded" or state == "cancelled"
    local drop = state == nil
      or (terminal and not ojsOwnPolicyCounts(ownStates, ownPeriodEnd, state, nowMs)
        and not ojsIsDuplicate({ state = state, created = created }, policy, nowMs))
    if drop then
      drops[#drops + 1] = member
    else
      candidates[#candidates + 1] = { id = jobId, queue = candidateQueue, base = base, state = state,
        location = location, created = created, seq = seq, due = due }
    end
  end
  return candidates, drops, own
end
