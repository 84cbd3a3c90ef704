--[[
  The policy a job was added with ("its own policy"), in the two places the scripts read it:

  - its index entry (includes/ojs-index): `bits`, the terminal states the policy counts
    (OJS_TERMINAL_BITS: completed 1, discarded 2, cancelled 4; the live states need no record, a
    live job is never reclaimed), and `periodEnd`, epoch ms at which its window closes (0 = no
    period). An add whose policy counts a finished job that its own policy no longer counts
    widens the entry (ojsWidenOwn), so reclaim keeps what a later policy has counted.
  - the job hash, only for the archive's expiry (cancel-job has no index key): `ojsOwn` is
    present only when the policy counts `cancelled`, holding its period end ("" = no period).

  ojsOwnCounts(bits, periodEnd, state, nowMs) -> whether the own policy would still count the
                                                 job, in terminal `state`, at `nowMs`
  ojsWidenOwn(bits, periodEnd, addBits, addEnd) -> bits, periodEnd covering both
  ojsArchiveTtlMs(own, retentionMs, nowMs)   -> the TTL (ms, 0 = none) of the job's cancelled
                                                archive; `own` is the `ojsOwn` field (false when
                                                missing)
]]
local OJS_TERMINAL_BITS = { completed = 1, discarded = 2, cancelled = 4 }

local function ojsOwnCounts(bits, periodEnd, state, nowMs)
  local bit = OJS_TERMINAL_BITS[state]
  if bit == nil or bits % (bit * 2) < bit then return false end
  return periodEnd == 0 or nowMs < periodEnd
end

-- A union that may keep an entry longer than either policy alone would, never shorter: keeping
-- more changes no decision (every add decides with its own policy), dropping too early could.
local function ojsWidenOwn(bits, periodEnd, addBits, addEnd)
  if bits == 0 then return addBits, addEnd end
  local union = 0
  for _, bit in ipairs({ 1, 2, 4 }) do
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
