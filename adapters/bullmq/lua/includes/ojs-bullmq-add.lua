--[[
  ojsBullMQAdd(K, bullmqArgv, delay, priority) -> BullMQ's reply: the job id, or a negative code

  BullMQ's own add, the variant BullMQ itself would pick (delay > priority > standard), spliced
  (`--- @bullmq` lines of the including script, which must come before this include). Shared by
  the general path (includes/ojs-unique-add) and the native one (includes/ojs-native-add).
]]
local function ojsBullMQAdd(K, bullmqArgv, delay, priority)
  if delay > 0 then return __bullmq_addDelayedJob(K, bullmqArgv) end
  if priority ~= 0 then return __bullmq_addPrioritizedJob(K, bullmqArgv) end
  return __bullmq_addStandardJob(K, bullmqArgv)
end
