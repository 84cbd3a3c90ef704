--[[
  ojsSplitMember(rootPrefix, member) -> queueName, jobId, base

  The members of a job's `ojsReplaced` list (the jobs a replace cancelled) are "<queue>:<jobId>". BullMQ refuses ":" in queue names
  (classes/queue-base.js), so the first colon always ends the queue name, while job ids may
  contain colons of their own.
]]
local function ojsSplitMember(rootPrefix, member)
  local sep = string.find(member, ":", 1, true)
  local queueName = string.sub(member, 1, sep - 1)
  return queueName, string.sub(member, sep + 1), rootPrefix .. queueName .. ":"
end
