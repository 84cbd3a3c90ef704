--[[
  ojsDecideConflict(candidates, policy, nowMs) -> action, existing, cancel, scheduledAt

  The Lua twin of the core's `decideConflict` (src/conflict-decision.ts), §5–§9:
    candidates: array of { id, state, created, seq, due } (created/due in epoch ms; seq: the
                insertion order, Redis TIME in µs of the insert, the core's `seq`)
    policy:     { states = set of OJS states, onConflict, years, months, fixedMs (nil = no period) }
  A candidate is a duplicate iff its state is in `states` AND (no period OR now < created + period).
  The oldest duplicate (created, then seq, then id: the core's `insertionOrder`) is `existing`.
    "insert"        no duplicate
    "ignore"        existing
    "reject"        existing
    "reject_active" replace met an active duplicate: §5.2 fallback to reject, nothing cancelled
    "replace"       existing, cancel = every duplicate (oldest first), scheduledAt = the due time of
                    the first scheduled duplicate for replace_except_schedule, else nil
  Why a twin rather than deciding in JS: a replace must cancel and insert in the same script
  (§8.4), and the JS decision would need a second, version-checked round trip for it. The twin is
  checked against the core on random inputs (test/adapters/bullmq-lua-decision.test.ts).
]]
local function ojsIsDuplicate(candidate, policy, nowMs)
  if not policy.states[candidate.state] then return false end
  if policy.fixedMs == nil then return true end
  return nowMs < ojsPeriodEnd(candidate.created, policy.years, policy.months, policy.fixedMs)
end

local function ojsDecideConflict(candidates, policy, nowMs)
  local duplicates = {}
  for _, candidate in ipairs(candidates) do
    if ojsIsDuplicate(candidate, policy, nowMs) then duplicates[#duplicates + 1] = candidate end
  end
  if #duplicates == 0 then return "insert" end
  table.sort(duplicates, function(a, b)
    if a.created ~= b.created then return a.created < b.created end
    -- Ties on the millisecond are common under load: insertion order names the same job as
    -- every other backend would. A missing seq falls through to the id, as in the core.
    if a.seq ~= nil and b.seq ~= nil and a.seq ~= b.seq then return a.seq < b.seq end
    return a.id < b.id
  end)
  local existing = duplicates[1]
  if policy.onConflict == "ignore" then return "ignore", existing end
  if policy.onConflict == "reject" then return "reject", existing end
  for _, candidate in ipairs(duplicates) do
    if candidate.state == "active" then return "reject_active", candidate end
  end
  local scheduledAt = nil
  if policy.onConflict == "replace_except_schedule" then
    for _, candidate in ipairs(duplicates) do
      if candidate.state == "scheduled" then scheduledAt = candidate.due break end
    end
  end
  return "replace", existing, duplicates, scheduledAt
end
