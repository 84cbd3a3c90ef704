--[[
  ojsObserve(fingerprintKey, rootPrefix, uniquenessKey, policy, nowMs, prune) -> candidates

  Every job of the fingerprint set with its OJS state, as candidates for ojsDecideConflict:
  { id, queue, base, state, location, created, seq, due }. The score is the insert's Redis TIME
  in µs: created_at = floor(score / 1000), and the score itself is the insertion order (`seq`).

  An entry is never a candidate when no decision can need it again: its job is gone (or the id
  now holds another job), or the job is finished and neither the policy it was added with
  (includes/ojs-own-policy) nor this add's counts it. Dropping by this add's policy alone would
  make a later, wider policy forget a finished job it still counts. A live job always stays.
  With `prune` (unique-add), such entries are also removed from the set (lazy reclaim,
  O(entries of this fingerprint), never O(queue depth)); unique-probe passes false and writes
  nothing. Leaving them out changes no decision either way: an entry this policy does not count
  is never a duplicate.
]]
local function ojsObserve(fingerprintKey, rootPrefix, uniquenessKey, policy, nowMs, prune)
  local candidates = {}
  local entries = rcall("ZRANGE", fingerprintKey, 0, -1, "WITHSCORES")
  for i = 1, #entries, 2 do
    local member = entries[i]
    local candidateQueue, jobId, base = ojsSplitMember(rootPrefix, member)
    local seq = tonumber(entries[i + 1])
    local created = math.floor(seq / 1000)
    local state, location, due, ownStates, ownPeriodEnd = ojsIndexedJobState(base, jobId, uniquenessKey, nowMs)
    local terminal = state == "completed" or state == "discarded" or state == "cancelled"
    local drop = state == nil
      or (terminal and not ojsOwnPolicyCounts(ownStates, ownPeriodEnd, state, nowMs)
        and not ojsIsDuplicate({ state = state, created = created }, policy, nowMs))
    if drop then
      if prune then rcall("ZREM", fingerprintKey, member) end
    else
      candidates[#candidates + 1] = { id = jobId, queue = candidateQueue, base = base, state = state,
        location = location, created = created, seq = seq, due = due }
    end
  end
  return candidates
end
