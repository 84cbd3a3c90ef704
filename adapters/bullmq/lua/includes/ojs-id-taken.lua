--[[
  ojsIdTaken(rootPrefix, queueName, queueBase, customId, queueSet, joining) -> whether a
  caller-chosen id is already in use

  Taken = a job hash, a cancelled archive or a pending successor (x_successor,
  includes/ojs-successor-id) under that id, in this queue, or, when `queueSet`
  is not "" (the backend's OJS ids, unique across queues), in any queue of that set. Shared by
  unique-add (which refuses before writing) and unique-probe (which answers the same way, so a
  probe can never turn an id clash into a duplicate). `joining` (nil, or a set of queue names):
  queues not in the set yet that earlier nodes of a unique-flow will add to it when written, for
  its check pass, which writes nothing.
]]
--- @include "includes/ojs-archive-key"
--- @include "includes/ojs-successor-id"
local function ojsIdTaken(rootPrefix, queueName, queueBase, customId, queueSet, joining)
  local function exists(base)
    return rcall("EXISTS", base .. customId) == 1 or rcall("EXISTS", ojsArchiveKey(base, customId)) == 1
      or ojsSuccessorTaken(base, customId)
  end
  if exists(queueBase) then return true end
  if queueSet ~= "" then
    for _, other in ipairs(rcall("SMEMBERS", queueSet)) do
      if other ~= queueName and exists(rootPrefix .. other .. ":") then return true end
    end
    for other in pairs(joining or {}) do
      if other ~= queueName and exists(rootPrefix .. other .. ":") then return true end
    end
  end
  return false
end
