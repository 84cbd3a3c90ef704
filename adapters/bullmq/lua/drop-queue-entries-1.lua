--[[
  drop-queue-entries: removes one queue's entries from an index hash shared with other queues,
  one HSCAN step at a time: the prefix's (`<prefix>ojs:global:index`), or the per-queue index of
  the queue's NFC name when that is another queue's name. Run by the wrapped queue's `obliterate`
  after BullMQ's own has deleted the queue: the entries of other queues stay.

  Input:
    KEYS[1]  the index hash
    ARGV[1]  HSCAN cursor ("0" to start)
    ARGV[2]  the obliterated queue's name (as the entries store it)
    ARGV[3]  HSCAN COUNT
    ARGV[4]  root key prefix with its colon ("bull:")
    ARGV[5]  the index's home queue (as unique-add's ARGV[18]): "" for the prefix's
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the index's namespace

  Steps: HSCAN one step; in each field returned, drop the entries of ARGV[2] (includes/ojs-index)
  and write the field back (HDEL when empty).

  Output: { nextCursor, dropped }  ("0": done)

  Each step is atomic; the caller loops until the cursor is "0". An entry of the queue written
  meanwhile (an add to the obliterated queue during the loop) may stay; it names a job that adds
  observe like any other.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-index"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local reply = rcall("HSCAN", KEYS[1], ARGV[1], "COUNT", tonumber(ARGV[3]))
local flat = reply[2]
local dropped = 0
for i = 1, #flat, 2 do
  local entries = ojsIndexDecode(flat[i + 1], ARGV[5], ARGV[4])
  local kept = {}
  for _, entry in ipairs(entries) do
    if entry.queue == ARGV[2] then dropped = dropped + 1 else kept[#kept + 1] = entry end
  end
  if #kept < #entries then ojsIndexWrite(KEYS[1], flat[i], kept, ARGV[5]) end
end
return { reply[1], dropped }
