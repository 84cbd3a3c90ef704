--[[
  ojsObserve(entries, uniquenessKey, policy, policyBits, nowMs, request) -> candidates, kept, changed, own, widened

  Every job of a key's index entries (includes/ojs-index, ojsIndexRead) with its OJS state, as
  candidates for ojsDecideConflict: { id, queue, base, state, location, created, seq, due }.

  Reads only; writes nothing. `kept` is `entries` without those no decision can need again:
  their job is gone (or the id now holds another job), or the job is finished and neither the
  policy it was added with (its entry's own policy) nor this add's counts it. A live job is never
  dropped. When this add's policy counts a finished job its own policy no longer does, the kept
  entry is widened by this policy (ojsWidenOwn), so the sweep (ojsSweep) keeps it for a later add
  of the same policy. `changed` says whether `kept` differs from `entries`; the caller writes it
  back (ojsIndexWrite) once every check has passed; `widened` whether an entry was widened (the
  entry tables are updated in place, so `entries` itself then holds the widened entries). Leaving dropped entries out of `candidates`
  changes no decision: an entry this policy does not count is never a duplicate.

  `own`: when `request` is not "" and a job of the entries (live or archived, whatever its
  state) was inserted by the add carrying that token (`ojsReq`), { id, queue, base, location } of
  it: this add is a re-execution (see unique-add, "Idempotent").
]]
local function ojsObserve(entries, uniquenessKey, policy, policyBits, nowMs, request)
  local candidates, kept, changed, own, widened = {}, {}, false, nil, false
  for _, entry in ipairs(entries) do
    local jobId, base = entry.id, entry.base
    local created = math.floor(entry.us / 1000)
    local state, location, due, madeBy = ojsIndexedJobState(base, jobId, uniquenessKey, nowMs)
    if state ~= nil and request ~= "" and madeBy == request then
      own = { id = jobId, queue = entry.queue, base = base, location = location }
    end
    local keep = state ~= nil
    if state == "completed" or state == "discarded" or state == "cancelled" then
      if not ojsOwnCounts(entry.bits, entry.periodEnd, state, nowMs) then
        keep = ojsIsDuplicate({ state = state, created = created }, policy, nowMs)
        if keep then
          local addEnd = 0
          if policy.fixedMs ~= nil then addEnd = ojsPeriodEnd(created, policy.years, policy.months, policy.fixedMs) end
          entry.bits, entry.periodEnd = ojsWidenOwn(entry.bits, entry.periodEnd, policyBits, addEnd)
          changed, widened = true, true
        end
      end
    end
    if keep then
      kept[#kept + 1] = entry
      candidates[#candidates + 1] = { id = jobId, queue = entry.queue, base = base, state = state,
        location = location, created = created, seq = entry.us, due = due }
    else
      changed = true
    end
  end
  return candidates, kept, changed, own, widened
end
