--[[
  unique-flow: a BullMQ flow tree with unique nodes, in one script: every check first, then
  BullMQ's own insert of each node (ours for a unique node), then BullMQ's release of the parents
  left with nothing pending: what BullMQ's FlowProducer sends in one MULTI, made all-or-nothing.

  Only leaves carry a policy (a node with children is refused by the adapter, as BullMQ refuses
  its own deduplication there). A unique node that meets a duplicate inserts nothing, and so is not
  a dependency of its parent: the parent does not wait for the existing job (as a deduplicated node
  of a BullMQ flow). Its reply names the existing job, as unique-add's does.

  Input:
    KEYS[1]  the first node's queue meta key, declared so that Redis Cluster routes the script to
             the flow's slot (every key of a flow shares one, as BullMQ requires of flows)
    ARGV     flat: n, then n nodes, then m, then m parents
      node   kind: "unique", or the BullMQ script BullMQ's flow add would run for the node
             (addParentJob, addStandardJob, addDelayedJob, addPrioritizedJob);
             13 keys: unique-add's KEYS[1..12] for the node's queue (the index key: the queue's
             meta key for a plain node), then its waiting-children key;
             BullMQ's ARGV[1..3] for the node (msgpacked args, data, msgpacked options), encoded
             by BullMQ for a flow insert (parent, dependencies key, defer parent release);
             for "unique" only, the 18 arguments unique-add takes as ARGV[4..21], then its
             ARGV[23] (count duplicates)
      parent parent key, its dependencies key, its queue key, its id: each parent a node names
             (BullMQ's addFlow releases the same ones)
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the namespaces of the unique nodes' indexes (and the prefix's with an id-claim set); recorded when done

  Steps:
    1. Check; nothing is written (but a refused reject's own bookkeeping, as unique-add writes it):
       - a node's parent exists, or is a node of this flow before it (BullMQ's -5);
       - a plain node whose id names a job of another parent that still exists (BullMQ's -7);
       - every unique node passes ojsUniqueAdd's checks (includes/ojs-unique-add, flow.check); one
         whose key an earlier unique node of this flow is about to insert under sees that node
         as a candidate (`inflight`), as the write pass will see the real job;
       - a replace does not cancel a job that is a parent of the flow (or its own parent);
       - a `reject` node of a key an earlier node replaces, updates or touches (x_update,
         last_duplicate), or a `replace` node of a key an earlier node updates or touches, is
         refused as "undecidable": the check does not replay those writes to stored jobs, which
         alone could turn its answer into a refusal (or a replace of a job not seen before);
       - an id claim also looks in the queues earlier nodes add to the id-claim set.
       The first refusal is the reply.
    2. Insert every node in order (BullMQ's: a parent before its children): plain nodes by
       BullMQ's own script (deferring parent release, as its flow add does), unique nodes by
       ojsUniqueAdd with BullMQ's parent arguments.
    3. Release: each parent with no pending dependency leaves waiting-children (BullMQ's
       releaseParentIfNoPendingDependencies, as its addFlow ends); the parents a replaced job
       left in step 2 too (not before: the node replacing it may be their new child).

  Output:
    { "done", { reply, … } }      per node: BullMQ's script's job id, or unique-add's reply
    { "refused", i, reply }       node i (1-based) refused in step 1: unique-add's refusal reply,
                                  { "undecidable", "replace" | "update" | "touch" } or
                                  { "replaces_parent", id }
    { "parent_missing", i, key }  node i's parent does not exist; nothing written
    { "parent_taken", i, id }     plain node i's id names a job another parent waits for
    { "failed", i, reply }        node i failed in step 2; never expected (step 1 checks every cause)
                                  and the nodes before it were written

  All-or-nothing, by construction: step 1 reads only and holds every check that can refuse, and
  in the same script (nothing runs in between), at the same clock (one TIME, node i at base + i
  µs), the write pass decides as it did for every node: what it reads differs from what step 1
  read only by this flow's earlier writes, which are inserts (modelled as `inflight`
  candidates), or replaces, updates and touches of stored jobs, after which no `reject` node of
  that key is let through; a node whose answer is not a refusal may still differ (an ignore
  after an update meets the updated job), which writes nothing that could fail. Idempotent: a re-sent flow finds
  its unique nodes' tokens (their replies replayed) and its plain nodes' ids (BullMQ answers a
  known id with the job).
]]
local rcall = redis.call
local OJS_SWEEP_SAMPLES = 4

--- @bullmq-host

--- @include "includes/ojs-job-state"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-decide-conflict"
--- @include "includes/ojs-archive-job"
--- @include "includes/ojs-read-job"
--- @include "includes/ojs-split-member"
--- @include "includes/ojs-read-policy"
--- @include "includes/ojs-id-taken"
--- @include "includes/ojs-index"
--- @include "includes/ojs-observe"
--- @include "includes/ojs-answer-duplicate"
--- @include "includes/ojs-replay"

--- @bullmq "addStandardJob"
--- @bullmq "addDelayedJob"
--- @bullmq "addPrioritizedJob"
--- @include "includes/ojs-bullmq-add"
--- @bullmq "addParentJob"
--- @bullmq "changePriority"
--- @bullmq "changeDelay"
--- @bullmq "promote"
--- @include "includes/ojs-update-job"
--- @bullmq-raw "releaseParentIfNoPendingDependencies"
--- @include "includes/ojs-detach-child"
--- @include "includes/ojs-unique-add"
--- @include "includes/ojs-layout"

local layoutRefusal, layoutMissing = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local PLAIN = {
  addStandardJob = __bullmq_addStandardJob,
  addDelayedJob = __bullmq_addDelayedJob,
  addPrioritizedJob = __bullmq_addPrioritizedJob,
  addParentJob = __bullmq_addParentJob,
}

local nodes = {}
local cursor = 2
for _ = 1, tonumber(ARGV[1]) do
  local node = { kind = ARGV[cursor], keys = {}, argv = {} }
  for k = 1, 13 do node.keys[k] = ARGV[cursor + k] end
  cursor = cursor + 14
  node.argv = { ARGV[cursor], ARGV[cursor + 1], ARGV[cursor + 2] }
  cursor = cursor + 3
  if node.kind == "unique" then
    for a = 0, 17 do node.argv[4 + a] = ARGV[cursor + a] end
    node.argv[23] = ARGV[cursor + 18]
    cursor = cursor + 19
  elseif PLAIN[node.kind] == nil then
    return redis.error_reply("unique-flow: unknown node kind " .. tostring(node.kind))
  end
  node.args = cmsgpack.unpack(node.argv[1])
  nodes[#nodes + 1] = node
end
local parents = {}
local parentCount = tonumber(ARGV[cursor])
cursor = cursor + 1
for _ = 1, parentCount do
  parents[#parents + 1] = { ARGV[cursor], ARGV[cursor + 1], ARGV[cursor + 2], ARGV[cursor + 3] }
  cursor = cursor + 4
end

-- One clock for the whole flow, the same in both passes: node i decides at `base + i` µs, so
-- the nodes' insertion order is their order in the flow.
local time = rcall("TIME")
local baseUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
local function clockOf(i)
  local us = baseUs + i
  return math.floor(us / 1000), us
end

-- Every parent a node names (a node of the flow, or the flow's own parent): a replace must not
-- cancel one (BullMQ's add would then miss its parent, after the replace archived it).
local parentKeys = {}
for _, node in ipairs(nodes) do
  local parentKey = node.args[BULLMQ_ARG_PARENT_KEY]
  if parentKey ~= nil then parentKeys[parentKey] = true end
end

-- 1. Check.
local flowJobs = {}
local inflight = {}
-- Per key: what an earlier node of the flow does to the key's stored jobs beyond inserting
-- (replace cancels them, update moves them, a last_duplicate answer touches them). The check pass
-- does not replay those writes, so a later `reject` node of the key, which only they could turn
-- into a refusal in the write pass, is refused here instead ("undecidable").
local changes = {}
-- The queues earlier nodes add to the id-claim set (ARGV[15]) when written: a later node's id
-- claim in the check pass looks there too, as it will in the write pass.
local joining = {}
for i, node in ipairs(nodes) do
  local args = node.args
  local jobKey = args[BULLMQ_ARG_KEY_PREFIX] .. args[BULLMQ_ARG_CUSTOM_ID]
  local parentKey = args[BULLMQ_ARG_PARENT_KEY]
  if parentKey ~= nil and not flowJobs[parentKey] and rcall("EXISTS", parentKey) == 0 then
    return { "parent_missing", i, parentKey }
  end
  if node.kind == "unique" then
    local slot = node.keys[12] .. "\0" .. node.argv[6]
    -- A reject can become a refusal, and a replace can meet an active job or a parent it did not
    -- count before (a touch or an update moves the window or the due time; a replace only leaves
    -- superseded jobs, which no later node counts).
    local onConflict, change = node.argv[7], changes[slot]
    if change ~= nil and (onConflict == "reject" or (change ~= "replace" and onConflict ~= "ignore")) then
      return { "refused", i, { "undecidable", change } }
    end
    local nowMs, nowUs = clockOf(i)
    local reply, action, cancel, scheduledAt, touch =
      ojsUniqueAdd(node.keys, node.argv, { check = true, inflight = inflight[slot], nowMs = nowMs, nowUs = nowUs, joining = joining })
    if reply ~= nil then return { "refused", i, reply } end
    for _, duplicate in ipairs(cancel or {}) do
      -- (A job of this flow, `inflight`, is a leaf: never a parent.)
      if not duplicate.inflight and parentKeys[duplicate.base .. duplicate.id] then
        return { "refused", i, { "replaces_parent", duplicate.id } }
      end
    end
    if (action == "insert" or action == "replace") and node.argv[15] ~= "" then joining[node.argv[5]] = true end
    if action == "replace" or action == "update" then changes[slot] = action
    elseif touch ~= nil and changes[slot] == nil then changes[slot] = "touch" end
    -- A node without a policy (enqueueMany's plain jobs) is nobody's duplicate.
    if (action == "insert" or action == "replace") and node.argv[6] ~= "" then
      local opts = cmsgpack.unpack(node.argv[3])
      local delay = tonumber(opts[BULLMQ_OPT_DELAY]) or 0
      local due = (delay > 0 and nowMs + delay) or nil
      -- replace_except_schedule: the new job takes the scheduled duplicate's due time.
      if scheduledAt ~= nil then due = math.max(scheduledAt, nowMs + 1) end
      local candidate = { id = args[BULLMQ_ARG_CUSTOM_ID], queue = node.argv[5], created = nowMs, seq = nowUs,
        inflight = true, state = (due ~= nil and "scheduled") or "available", due = due, sched = due }
      -- A replace cancels every duplicate, the flow's own included: only the new job is left.
      if action == "replace" then inflight[slot] = { candidate }
      else
        inflight[slot] = inflight[slot] or {}
        inflight[slot][#inflight[slot] + 1] = candidate
      end
    end
  elseif rcall("EXISTS", jobKey) == 1 then
    -- BullMQ's add answers a known id with that job and makes it this parent's child, unless
    -- another parent that still exists (or that this flow creates) waits for it: -7.
    local owner = rcall("HGET", jobKey, "parentKey")
    if owner and owner ~= parentKey and parentKey ~= nil and (flowJobs[owner] or rcall("EXISTS", owner) == 1) then
      return { "parent_taken", i, args[BULLMQ_ARG_CUSTOM_ID] }
    end
  end
  flowJobs[jobKey] = true
end

-- 2. Insert.
local replies = {}
-- The parents a replaced job left: released in step 3, when the node replacing it (which may be
-- their new child) is in.
local detached = {}
local function detachLater(jobKey, nowMs) ojsDetachChild(jobKey, nowMs, detached) end
local function release(list, nowMs)
  for _, parent in ipairs(list) do
    __bullmq_releaseParentIfNoPendingDependencies({ parent[1], parent[2] }, { parent[3], parent[4], nowMs })
  end
end
for i, node in ipairs(nodes) do
  local reply
  local failed = false
  if node.kind == "unique" then
    local nowMs, nowUs = clockOf(i)
    reply = ojsUniqueAdd(node.keys, node.argv, { check = false, detach = detachLater, nowMs = nowMs, nowUs = nowUs })
    local answer = reply[1]
    failed = answer ~= "created" and answer ~= "replaced" and answer ~= "ignored" and answer ~= "updated"
  else
    reply = PLAIN[node.kind](node.keys, node.argv)
    failed = type(reply) == "number" and reply < 0
  end
  if failed then
    -- Never expected (step 1 checks every cause). A parent a replace already took a child from
    -- is not left waiting for nothing.
    release(detached, clockOf(i))
    return { "failed", i, reply }
  end
  replies[i] = reply
end

-- 3. Release.
local nowMs = clockOf(#nodes + 1)
release(parents, nowMs)
release(detached, nowMs)

ojsLayoutRecord(layoutMissing)
return { "done", replies }
