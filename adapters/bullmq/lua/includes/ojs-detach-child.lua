--[[
  ojsDetachChild(jobKey, nowMs): a job about to be archived (cancelled) stops being a dependency
  of its flow parent, as BullMQ's own removal of a child does: it leaves the parent's
  `:dependencies` set, and the parent moves on (out of `waiting-children`) when nothing else is
  pending. The move is BullMQ's own, spliced: releaseParentIfNoPendingDependencies, the step that
  ends BullMQ's flow insert (bullmq-host.ts, BULLMQ_FLOW_SCRIPTS).

  With a BullMQ that lacks that script (BULLMQ_CAN_RELEASE_PARENT false) the dependency is left
  as it is: the parent keeps waiting, as it did before unique flow nodes existed. A unique job
  only gets a parent through unique-flow, which such a BullMQ refuses, so this only concerns a
  plain child cancelled through the backend.
  Reads the job's `parentKey` and `parent` ({ id, queueKey }, JSON) fields, which BullMQ's add
  writes on a child. Cannot fail: SREM and the spliced script act on keys of their own type.
]]
local function ojsDetachChild(jobKey, nowMs)
  if not BULLMQ_CAN_RELEASE_PARENT then return end
  local fields = rcall("HMGET", jobKey, "parentKey", "parent")
  local parentKey, parent = fields[1], fields[2]
  if not parentKey or not parent then return end
  local dependencies = parentKey .. ":dependencies"
  if rcall("SREM", dependencies, jobKey) == 0 then return end
  local decoded = cjson.decode(parent)
  __bullmq_releaseParentIfNoPendingDependencies({ parentKey, dependencies }, { decoded.queueKey, decoded.id, nowMs })
end
