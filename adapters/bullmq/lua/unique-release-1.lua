--[[
  unique-release: releases a uniqueness key (releaseUniqueKey): the next add of it inserts,
  whatever jobs hold it now.

  Input:
    KEYS[1]  the index hash the key's jobs are listed in (as unique-add's KEYS[12])

    ARGV[1]  root key prefix with its colon ("bull:")
    ARGV[2]  uniqueness key (§4)
    ARGV[3]  the index's home queue (as unique-add's ARGV[18])
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the index's namespace

  Steps:
    1. Read the key's index field (its first 32 hex digits; includes/ojs-index).
    2. Drop every entry whose job (or archive) still carries this key (`ojsKey`), and the dead
       ones (job gone, or the id now another job's); keep the entries of another key sharing
       the field. Write the field back (HDEL when empty).
  The jobs are left as they are: a live one still runs, and its hash keeps `ojsKey`, so views
  still report the key; with no index entry, no add of the key observes it again.

  Output:
    { "released", n }  n = how many jobs stopped holding the key (0: nothing held it)

  All-or-nothing: one HSET or HDEL, after reads only.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-index"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()
local uniquenessKey = ARGV[2]
local field = string.sub(uniquenessKey, 1, 32)
local entries = ojsIndexRead(KEYS[1], field, ARGV[3], ARGV[1])
local kept, released = {}, 0
for _, entry in ipairs(entries) do
  local state = ojsIndexedJobState(entry.base, entry.id, uniquenessKey, nowMs)
  if state ~= nil then
    released = released + 1
    -- The native path's job (includes/ojs-index): its deduplication key goes, or the next add would still meet it.
    if rcall("GET", entry.base .. "de:" .. field) == entry.id then rcall("DEL", entry.base .. "de:" .. field) end
    -- x_successor: its pending successor goes with the key (includes/ojs-successor-id).
    local pending = rcall("HGET", entry.base .. "dn:" .. OJS_SUCCESSOR_DEID .. entry.id, "jid")
    if pending then
      rcall("DEL", entry.base .. "dn:" .. OJS_SUCCESSOR_DEID .. entry.id)
      rcall("HDEL", entry.base .. "ojs:successors", pending)
    end
  elseif rcall("EXISTS", entry.base .. entry.id) == 1 or rcall("EXISTS", ojsArchiveKey(entry.base, entry.id)) == 1 then
    -- Another key sharing the field (or an id reused by another job, which the next observe drops).
    kept[#kept + 1] = entry
  end
end
if #kept < #entries then ojsIndexWrite(KEYS[1], field, kept, ARGV[3]) end
return { "released", released }
