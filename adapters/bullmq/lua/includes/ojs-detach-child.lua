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

  `later` (unique-flow): a table the parent is appended to ({ parentKey, dependencies key, queue
  key, id }) instead of being released now; the flow releases it once every node is in, since
  the node that replaces the job may be that parent's new child (a root under `opts.parent`).
]]
local function ojsDetachChild(jobKey, nowMs, later)
  if not BULLMQ_CAN_RELEASE_PARENT then return end
  local fields = rcall("HMGET", jobKey, "parentKey", "parent")
  local parentKey, parent = fields[1], fields[2]
  if not parentKey or not parent then return end
  local dependencies = parentKey .. ":dependencies"
  if rcall("SREM", dependencies, jobKey) == 0 then return end
  local decoded = cjson.decode(parent)
  if later then
    later[#later + 1] = { parentKey, dependencies, decoded.queueKey, decoded.id }
    return
  end
  __bullmq_releaseParentIfNoPendingDependencies({ parentKey, dependencies }, { decoded.queueKey, decoded.id, nowMs })
end
