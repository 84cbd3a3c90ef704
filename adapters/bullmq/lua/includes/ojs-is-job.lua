--[[
  ojsIsJobOrAbsent(key) -> true when `key` is missing or is a BullMQ job hash (one with BullMQ's
  `timestamp` field, which every add writes); false for BullMQ's other keys under the queue's
  prefix ("meta", "events", "id", "wait" …), which an id from a caller could otherwise name.
  TYPE first: HEXISTS on a key that is not a hash is a WRONGTYPE error.
]]
local function ojsIsJobOrAbsent(key)
  local kind = rcall("TYPE", key)
  if type(kind) == "table" then kind = kind["ok"] end
  if kind == "none" then return true end
  return kind == "hash" and rcall("HEXISTS", key, "timestamp") == 1
end
