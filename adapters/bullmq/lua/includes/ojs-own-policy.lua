--[[
  The policy a job was added with ("its own policy"), as unique-add stores it on the job hash
  (and so on its cancelled archive, which is the same hash renamed):
    ojsStates     the policy's states, comma-separated ("" for a plain job)
    ojsPeriodEnd  epoch ms at which its window closes (created_at + period), "" = no period

  ojsListHas(list, item)                 -> whether the comma-separated `list` holds `item`
  ojsOwnPolicyCounts(states, periodEnd, state, nowMs)
                                         -> whether the job's own policy would still count it,
                                            in `state`, as a duplicate at `nowMs`
  ojsArchiveTtlMs(states, periodEnd, retentionMs, nowMs)
                                         -> the TTL (ms, 0 = none) of the job's cancelled archive
  `states` / `periodEnd` may be false (HMGET of a missing field): a job added without a policy.
]]
local function ojsListHas(list, item)
  if not list or list == "" then return false end
  return string.find("," .. list .. ",", "," .. item .. ",", 1, true) ~= nil
end

local function ojsOwnPolicyCounts(states, periodEnd, state, nowMs)
  if not ojsListHas(states, state) then return false end
  return not periodEnd or periodEnd == "" or nowMs < tonumber(periodEnd)
end

-- The archive must outlive every moment at which the job's own policy still counts it as
-- `cancelled` (memory keeps a cancelled job for ever): no expiry when the policy checks
-- `cancelled` and has no period, else at least until its window closes. Otherwise it is only
-- kept for reading (getJob), for the configured retention. retentionMs 0 = keep for ever.
local function ojsArchiveTtlMs(states, periodEnd, retentionMs, nowMs)
  if retentionMs == 0 then return 0 end
  if not ojsListHas(states, "cancelled") then return retentionMs end
  if not periodEnd or periodEnd == "" then return 0 end
  return math.max(retentionMs, tonumber(periodEnd) - nowMs)
end
