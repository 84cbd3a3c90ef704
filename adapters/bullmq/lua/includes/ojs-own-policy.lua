--[[
  The policy a job was added with ("its own policy"), in the two places the scripts read it:

  - its index entry (includes/ojs-index): `bits`, the terminal states the policy counts
    (OJS_TERMINAL_BITS: completed 1, discarded 2, cancelled 4; the live states need no record, a
    live job is never reclaimed), and `periodEnd`, epoch ms at which its window closes (0 = no
    period). An add whose policy counts a finished job that its own policy no longer counts
    widens the entry (ojsWidenOwn), so reclaim keeps what a later policy has counted.
  - the job hash, only for the archive's expiry (cancel-job has no index key): `ojsOwn` is
    present only when the policy counts `cancelled`, holding its period end ("" = no period).
  - for a policy whose window is anchored elsewhere than at created_at (`x_period_anchor`), the
    anchor moves after the insert (a retry or an update moves the due time, a duplicate moves the
    last attempt), so the stored period end is only a lower bound: the entry carries bit 8
    (OJS_ANCHORED_BIT) and the job hash `ojsPeriod` = "<s|l|f>,years,months,fixedMs" (s: the due
    time, l: the last duplicate attempt, f: the finish, BullMQ's `finishedOn` or the archive's
    `ojsCancelledOn`), and the end is recomputed from the hash when read
    (ojsOwnEnd). Recomputing at read rather than on every move: BullMQ's own scripts (retries)
    move the due time, and they know nothing of the index.
  - a job a replace superseded (includes/ojs-unique-add): its entry's bits are 16
    (OJS_SUPERSEDED_BIT) alone and its periodEnd 0: once finished it is no candidate for any
    policy (the core's `superseded`), and its entry stays only for the replay grace.

  ojsOwnEnd(bits, periodEnd, hashKey)        -> the own policy's period end for the job whose
                                                hash (or archive) is `hashKey` (0 = none)
  ojsAnchorEnd(hash, anchorAndPeriod)        -> the end from the job's fields (ojsPeriod form)
  ojsOwnCounts(bits, periodEnd, state, nowMs) -> whether the own policy would still count the
                                                 job, in terminal `state`, at `nowMs`
  ojsWidenOwn(bits, periodEnd, addBits, addEnd) -> bits, periodEnd covering both
  ojsArchiveTtlMs(own, retentionMs, nowMs)   -> the TTL (ms, 0 = none) of the job's cancelled
                                                archive; `own` is the `ojsOwn` field (false when
                                                missing)
]]
local OJS_TERMINAL_BITS = { completed = 1, discarded = 2, cancelled = 4 }
local OJS_ANCHORED_BIT = 8
local OJS_SUPERSEDED_BIT = 16

local function ojsHasBit(bits, bit)
  return bits % (bit * 2) >= bit
end

-- timestamp, delay, ojsLast, finished (finishedOn or ojsCancelledOn): the job's fields an
-- anchored period end is computed from.
local function ojsAnchorEnd(timestamp, delay, last, ojsPeriod, finished)
  local kind, years, months, fixedMs = string.match(ojsPeriod, "^(%a),(%d+),(%d+),(%d+)$")
  local anchor = tonumber(timestamp) or 0
  if kind == "s" then
    anchor = anchor + (tonumber(delay) or 0)
  elseif kind == "f" then
    anchor = tonumber(finished) or anchor
  elseif last and tonumber(last) and tonumber(last) > anchor then
    anchor = tonumber(last)
  end
  return ojsPeriodEnd(anchor, tonumber(years), tonumber(months), tonumber(fixedMs))
end

local function ojsOwnEnd(bits, periodEnd, hashKey)
  if periodEnd == 0 or not ojsHasBit(bits, OJS_ANCHORED_BIT) then return periodEnd end
  local f = rcall("HMGET", hashKey, "timestamp", "delay", "ojsLast", "ojsPeriod", BULLMQ_FINISHED_ON, "ojsCancelledOn")
  if not f[4] then return periodEnd end
  return math.max(periodEnd, ojsAnchorEnd(f[1], f[2], f[3], f[4], f[5] or f[6]))
end

local function ojsOwnCounts(bits, periodEnd, state, nowMs)
  local bit = OJS_TERMINAL_BITS[state]
  if bit == nil or not ojsHasBit(bits, bit) then return false end
  return periodEnd == 0 or nowMs < periodEnd
end

-- A union that may keep an entry longer than either policy alone would, never shorter: keeping
-- more changes no decision (every add decides with its own policy), dropping too early could.
local function ojsWidenOwn(bits, periodEnd, addBits, addEnd)
  -- A superseded entry counts for no policy again, even while its job is live (a revived one).
  if ojsHasBit(bits, OJS_SUPERSEDED_BIT) then return bits, periodEnd end
  if bits == 0 then return addBits, addEnd end
  local union = 0
  for _, bit in ipairs({ 1, 2, 4, OJS_ANCHORED_BIT }) do
    if bits % (bit * 2) >= bit or addBits % (bit * 2) >= bit then union = union + bit end
  end
  if periodEnd == 0 or addEnd == 0 then return union, 0 end
  return union, math.max(periodEnd, addEnd)
end

-- The archive must outlive every moment at which the job's own policy still counts it as
-- `cancelled` (memory keeps a cancelled job for ever): no expiry when the policy checks
-- `cancelled` and has no period, else at least until its window closes. Otherwise it is only
-- kept for reading (getJob), for the configured retention. retentionMs 0 = keep for ever.
local function ojsArchiveTtlMs(own, retentionMs, nowMs)
  if retentionMs == 0 then return 0 end
  if not own then return retentionMs end
  if own == "" then return 0 end
  return math.max(retentionMs, tonumber(own) - nowMs)
end
