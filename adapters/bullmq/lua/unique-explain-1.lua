--[[
  unique-explain: every job recorded under a uniqueness key, with what an add's decision reads of
  it (explainUnique), read atomically. The decision itself is the core's (src/unique-explain.ts).

  Input:
    KEYS[1]  the index hash the key's jobs are listed in (as unique-add's KEYS[12])

    ARGV[1]  root key prefix with its colon ("bull:")
    ARGV[2]  uniqueness key (§4)
    ARGV[3]  the index's home queue (as unique-add's ARGV[18])
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the index's namespace

  Steps:
    1. now = Redis TIME (the clock unique-add decides with).
    2. Each entry of the key's field whose job is still the key's (includes/ojs-job-state,
       ojsIndexedJobState): its state, and the numbers the core's ConflictCandidate holds.

  Output:
    { nowMs, count, then per job: id, queue, ojsState, createdMs, seqUs, scheduledMs, lastMs, superseded, finishedMs }
      scheduledMs: the job's current due time (as getJob reports it); lastMs: its last duplicate
      attempt (x_period_anchor "last_duplicate"), "" when none; superseded: 1 when a replace took
      the key from it, else 0; finishedMs: when a finished job finished (BullMQ's finishedOn, an
      archive's ojsCancelledOn), "" for a live one (x_period_anchor "finished_at").

  Reads only: nothing is written, not even the entries an add would drop.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-index"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()
local uniquenessKey = ARGV[2]
local entries = ojsIndexRead(KEYS[1], string.sub(uniquenessKey, 1, 32), ARGV[3], ARGV[1])
local reply = { nowMs, 0 }
local count = 0
for _, entry in ipairs(entries) do
  local state, location, due = ojsIndexedJobState(entry.base, entry.id, uniquenessKey, nowMs)
  if state ~= nil then
    local created = math.floor(entry.us / 1000)
    local hashKey = entry.base .. entry.id
    if location == "archive" then hashKey = ojsArchiveKey(entry.base, entry.id) end
    local f = rcall("HMGET", hashKey, "timestamp", "delay", "ojsLast", BULLMQ_FINISHED_ON, "ojsCancelledOn")
    local sched = due or ((tonumber(f[1]) or created) + (tonumber(f[2]) or 0))
    local superseded = 0
    if ojsHasBit(entry.bits, OJS_SUPERSEDED_BIT) then superseded = 1 end
    count = count + 1
    reply[#reply + 1] = entry.id
    reply[#reply + 1] = entry.queue
    reply[#reply + 1] = state
    reply[#reply + 1] = created
    reply[#reply + 1] = entry.us
    reply[#reply + 1] = sched
    reply[#reply + 1] = f[3] or ""
    reply[#reply + 1] = superseded
    local finished = ""
    if state == "completed" or state == "discarded" or state == "cancelled" then finished = f[4] or f[5] or "" end
    reply[#reply + 1] = finished
  end
end
reply[2] = count
return reply
