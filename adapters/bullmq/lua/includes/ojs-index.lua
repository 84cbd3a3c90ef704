--[[
  The uniqueness index: one hash per queue (`<base>ojs:index`), and one per prefix for policies
  without the `queue` dimension (`<prefix>ojs:global:index`). A field is the first 32 hex digits
  of a uniqueness key; its value lists the jobs indexed under it, msgpacked flat, five values per
  job:
    us        the insert's Redis TIME in µs (created_at = floor(us / 1000); us is the insertion
              order, the core's `seq`)
    queue     the job's queue name, "" for the index's home queue (the per-queue index's own)
    id        the job id
    bits      the terminal states its own policy counts, plus 8 when its window's anchor moves
              (includes/ojs-own-policy)
    periodEnd epoch ms at which its own policy's window closes, 0 = none
  A field names jobs by id only: the job under that id is the entry's while its hash (or its
  archive) carries the full key (`ojsKey`), so a 32-digit prefix shared by two keys, or an id
  reused after a remove(), only ever costs a look, never a wrong duplicate.

  ojsIndexRead(indexKey, field, homeQueue, rootPrefix) -> entries
    each { us, queue, id, base, bits, periodEnd }; {} when the field is missing. In a queue's
    index, also the job BullMQ's deduplication key `<base>de:<field>` names when no entry lists
    it: the native path's (includes/ojs-native-add), whose jobs have no entry until a writer of
    the field keeps them.
  ojsIndexWrite(indexKey, field, entries)  HSET the packed entries, HDEL when none is left
  ojsIndexEntry(us, queue, id, bits, periodEnd, homeQueue, rootPrefix) -> entry
  ojsSweep(indexKey, skipField, homeQueue, rootPrefix, nowMs, samples)
    The amortised reclaim, run by an insert: `samples` fields drawn at random (HRANDFIELD with
    a negative count: O(samples) on a hashtable, one pass in C over a small listpack) lose the
    entries no policy can count any more: job gone or its id now another job's, or a completed
    job that its own (possibly widened) policy no longer counts, once the replay grace has passed
    (ojsFinishedKept). A live job is never dropped, nor a failed one (a retry revives it); a
    cancelled one is left to its key's adds (observe, which keeps it for the replay grace after
    its cancellation) or its archive's expiry.
    With k samples per insert, dead entries settle at about 1/(k-1) of the live ones, whatever
    the retention of finished jobs.
]]
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-successor-id"
local function ojsIndexEntry(us, queue, id, bits, periodEnd, homeQueue, rootPrefix)
  local queueName = queue
  if queue == "" then queueName = homeQueue end
  return { us = us, queue = queueName, id = id, base = rootPrefix .. queueName .. ":", bits = bits, periodEnd = periodEnd }
end

local function ojsIndexDecode(packed, homeQueue, rootPrefix)
  local flat = cmsgpack.unpack(packed)
  local entries = {}
  for i = 1, #flat, 5 do
    entries[#entries + 1] = ojsIndexEntry(flat[i], flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4], homeQueue, rootPrefix)
  end
  return entries
end

local function ojsIndexRead(indexKey, field, homeQueue, rootPrefix)
  local packed = rcall("HGET", indexKey, field)
  local entries = {}
  if packed then entries = ojsIndexDecode(packed, homeQueue, rootPrefix) end
  if homeQueue == "" then return entries end
  -- The native path's job of this field (includes/ojs-native-add), which has no entry of its own:
  -- BullMQ's deduplication key names it while it is live. Listed like any entry, with its own
  -- policy's (the default states: no terminal bits, no window); a writer keeps it in the field.
  local base = rootPrefix .. homeQueue .. ":"
  local holder = rcall("GET", base .. "de:" .. field)
  if not holder then return entries end
  for _, entry in ipairs(entries) do
    if entry.id == holder and entry.base == base then return entries end
  end
  local created = tonumber(rcall("HGET", base .. holder, "timestamp"))
  if created ~= nil then entries[#entries + 1] = ojsIndexEntry(created * 1000, "", holder, 0, 0, homeQueue, rootPrefix) end
  return entries
end

local function ojsIndexWrite(indexKey, field, entries, homeQueue)
  if #entries == 0 then
    rcall("HDEL", indexKey, field)
    return
  end
  local flat = {}
  for _, entry in ipairs(entries) do
    local queue = entry.queue
    if queue == homeQueue then queue = "" end
    flat[#flat + 1] = entry.us
    flat[#flat + 1] = queue
    flat[#flat + 1] = entry.id
    flat[#flat + 1] = entry.bits
    flat[#flat + 1] = entry.periodEnd
  end
  rcall("HSET", indexKey, field, cmsgpack.pack(flat))
end

-- How long a finished job's entry outlives its job's finish whatever the policies: ioredis
-- re-sends an add whose reply a reconnect lost, and that re-run recognises itself only by finding
-- its job in the key's entries (unique-add, "Idempotent"); a worker may complete the job before
-- the re-send arrives. A reconnect's re-send comes within seconds; the margin is wide.
local OJS_REPLAY_GRACE_MS = 60000

-- Whether a job that finished or was cancelled at `sinceMs` (epoch ms, false when unknown) did so
-- within the replay grace.
local function ojsInReplayGrace(sinceMs, nowMs)
  return nowMs - (tonumber(sinceMs) or 0) < OJS_REPLAY_GRACE_MS
end

-- Whether a finished job's entry is kept whatever the policies count: its job finished within
-- the replay grace, or it failed for good (BullMQ's `failed`): `job.retry()` / `queue.retryJobs()`
-- (dashboards) make such a job live again, and a live job must be in its key's entries. The
-- failed set is bounded by the queue's removeOnFail. A completed job is reclaimed after the grace
-- (docs/bullmq.md: one revived by hand re-enters without its entry).
local function ojsFinishedKept(base, jobId, finishedOn, nowMs)
  if ojsInReplayGrace(finishedOn, nowMs) then return true end
  return rcall("ZSCORE", base .. "failed", jobId) ~= false
end

-- Whether the sweep may drop `entry` (the field `field` of the index). Cheaper than the full
-- state: a live job is kept whatever it is doing. An entry whose own policy counts no finished
-- state (the common case) is dead once its job is completed (BullMQ's `finishedOn`, not failed,
-- past the replay grace: ojsFinishedKept) or gone, or its id holds another job: one HMGET plus
-- one ZSCORE. A cancelled job's entry stays while its archive does (or until an add of its key
-- past the replay grace): a re-sent add whose reply was lost, whose job a replace archived
-- meanwhile, finds its token there (unique-add, "Idempotent"). Otherwise a completed job is
-- checked against the entry's own policy.
local function ojsSweepDrops(entry, field, nowMs)
  local jobKey = entry.base .. entry.id
  local own = rcall("HMGET", jobKey, "ojsKey", BULLMQ_FINISHED_ON)
  -- x_successor: a pending successor, or one BullMQ promoted that no writer adopted yet.
  if not own[1] and (ojsSuccessorTaken(entry.base, entry.id) or ojsSuccessorOjs(jobKey) ~= nil) then return false end
  if not own[1] or string.sub(own[1], 1, 32) ~= field then
    local archived = rcall("HGET", ojsArchiveKey(entry.base, entry.id), "ojsKey")
    return not archived or string.sub(archived, 1, 32) ~= field
  end
  if not own[2] then return false end
  if ojsFinishedKept(entry.base, entry.id, own[2], nowMs) then return false end
  if entry.bits % OJS_ANCHORED_BIT == 0 then return true end
  if not rcall("ZSCORE", entry.base .. "completed", entry.id) then return false end
  return not ojsOwnCounts(entry.bits, ojsOwnEnd(entry.bits, entry.periodEnd, jobKey), "completed", nowMs)
end

local function ojsSweep(indexKey, skipField, homeQueue, rootPrefix, nowMs, samples)
  local drawn = rcall("HRANDFIELD", indexKey, -samples, "WITHVALUES")
  local seen = {}
  for i = 1, #drawn, 2 do
    local field = drawn[i]
    if field ~= skipField and not seen[field] then
      seen[field] = true
      local entries = ojsIndexDecode(drawn[i + 1], homeQueue, rootPrefix)
      local kept = {}
      for _, entry in ipairs(entries) do
        if not ojsSweepDrops(entry, field, nowMs) then kept[#kept + 1] = entry end
      end
      if #kept < #entries then ojsIndexWrite(indexKey, field, kept, homeQueue) end
    end
  end
end
