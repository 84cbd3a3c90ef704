--[[
  x_successor on the general path (docs/design/successor.md, "BullMQ"): a duplicate of the key's
  active job (its holder) is kept as the key's one pending successor, in BullMQ's own layout for
  `deduplication.keepLastIfActive`, so that BullMQ's finishing script (moveToFinished: completed,
  or failed for good; not a retry) adds it atomically with the holder's end (a host fact with its
  contract test, bullmq-host-contract.test.ts).

  Keys, in the holder's queue (`base`):
    <base>dn:ojs:s:<holder id>   BullMQ's next-job hash (name, data, opts, jid), plus `ojsReq` (the
                                 token of the add that stored it, for a re-sent add) and `ojsArgs`
                                 (its msgpacked BullMQ arguments, for a promotion of our own:
                                 includes/ojs-successor-promote)
    <base>de:ojs:s:<holder id>   the holder's id: BullMQ's deduplication key for the holder's
                                 `deid`, so BullMQ's own removal of the holder drops the successor
                                 with it (it deletes `dn` only beside the key naming the job) and
                                 its finish deletes the key
    <base>ojs:successors         hash: a pending successor's id -> its holder's id (the id is
                                 taken: includes/ojs-id-taken); valid while the holder's `dn`
                                 still names that id (a removed holder leaves a stale field,
                                 dropped by the key's next observe)
  The successor's `opts` carry `de` (BullMQ sets the promoted job's `deid` and deduplication key
  from it, and deletes the key when that job finishes) and `ojs`: the OJS fields BullMQ's
  promotion does not write (key, policy, token, meta, period, terminal bits, window). The key's
  index field lists the successor from the add on (an entry whose job does not exist yet, kept
  while reserved); the first script that observes it promoted adopts it (ojsSuccessorAdopt): the
  OJS fields onto the job hash, the entry's time and window from the job's own `timestamp`.

  ojsSuccessorTaken, ojsSuccessorOwn, ojsSuccessorOjs: includes/ojs-successor-id
  ojsSuccessorPending(base, holderId) -> the pending successor's id, its token, or nil
  ojsSuccessorKeep(holder, successorId, name, data, opts, ojs, request, packedArgs)
      stores (or replaces) the holder's successor; returns the replaced successor's id or nil
  ojsSuccessorDrop(base, holderId) -> the dropped successor's id or nil (a key release)
  ojsSuccessorDropOfKey(entries) drops the pending successor listed among a key's index entries,
      whichever job holds it (a replace of the key)
  ojsSuccessorAdopt(jobKey, ojs, entry) -> the OJS fields written onto a promoted job
]]
--- @include "includes/ojs-successor-id"

local function ojsSuccessorPending(base, holderId)
  local stored = rcall("HMGET", base .. "dn:" .. OJS_SUCCESSOR_DEID .. holderId, "jid", "ojsReq")
  if not stored[1] then return nil end
  return stored[1], stored[2]
end

local function ojsSuccessorKeep(holder, successorId, name, data, opts, ojs, request, packedArgs)
  local base, holderId = holder.base, holder.id
  local deid = OJS_SUCCESSOR_DEID .. holderId
  local holderKey = base .. holderId
  local current = rcall("HGET", holderKey, "deid")
  if current ~= deid then
    -- A holder that was itself a successor inherited its predecessor's deid (or the native path's
    -- field): its key goes, the holder takes its own.
    if current and rcall("GET", base .. "de:" .. current) == holderId then rcall("DEL", base .. "de:" .. current) end
    rcall("HSET", holderKey, "deid", deid)
    rcall("SET", base .. "de:" .. deid, holderId)
  end
  local nextKey = base .. "dn:" .. deid
  local replaced = rcall("HGET", nextKey, "jid")
  if replaced then rcall("HDEL", base .. "ojs:successors", replaced) end
  opts["de"] = { id = deid, keepLastIfActive = true }
  opts["ojs"] = ojs
  rcall("DEL", nextKey)
  rcall("HSET", nextKey, "name", name, "data", data, "opts", cjson.encode(opts), "jid", successorId, "ojsReq", request,
    "ojsArgs", packedArgs)
  rcall("HSET", base .. "ojs:successors", successorId, holderId)
  return replaced
end

local function ojsSuccessorDrop(base, holderId)
  local nextKey = base .. "dn:" .. OJS_SUCCESSOR_DEID .. holderId
  local dropped = rcall("HGET", nextKey, "jid")
  if not dropped then return nil end
  rcall("DEL", nextKey)
  rcall("HDEL", base .. "ojs:successors", dropped)
  return dropped
end

local function ojsSuccessorAdopt(jobKey, ojs, entry)
  local f = rcall("HMGET", jobKey, "timestamp", "delay")
  local created = tonumber(f[1]) or 0
  local bits = tonumber(ojs.bits) or 0
  local periodEnd = 0
  if type(ojs.win) == "table" then
    local anchor = created
    if ojs.anchor == "scheduled_at" then anchor = created + (tonumber(f[2]) or 0) end
    periodEnd = ojsPeriodEnd(anchor, ojs.win[1], ojs.win[2], ojs.win[3])
  end
  local fields = { "ojsKey", ojs.key, "ojsPolicy", ojs.policy }
  if ojs.period ~= nil and ojs.period ~= "" then
    bits = bits + OJS_ANCHORED_BIT
    fields[#fields + 1], fields[#fields + 2] = "ojsPeriod", ojs.period
  end
  if ojs.meta ~= nil and ojs.meta ~= "" then fields[#fields + 1], fields[#fields + 2] = "ojsMeta", ojs.meta end
  if ojsHasBit(bits, OJS_TERMINAL_BITS.cancelled) then
    fields[#fields + 1], fields[#fields + 2] = "ojsOwn", (periodEnd == 0 and "") or string.format("%.0f", periodEnd)
  end
  if ojs.req ~= nil and ojs.req ~= "" then fields[#fields + 1], fields[#fields + 2] = "ojsReq", ojs.req end
  rcall("HSET", jobKey, unpack(fields))
  entry.us, entry.bits, entry.periodEnd = created * 1000, bits, periodEnd
end

local function ojsSuccessorDropOfKey(entries)
  for _, entry in ipairs(entries) do
    local holder = rcall("HGET", entry.base .. "ojs:successors", entry.id)
    if holder and ojsSuccessorTaken(entry.base, entry.id) then ojsSuccessorDrop(entry.base, holder) end
  end
end
