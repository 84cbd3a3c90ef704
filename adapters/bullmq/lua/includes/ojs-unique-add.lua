--[[
  ojsUniqueAdd(KEYS, ARGV, flow) -> reply: the body of unique-add (lua/unique-add-12.lua, whose
  header is the contract: KEYS, ARGV, steps, replies, why it is all-or-nothing), as a function so
  that unique-flow runs it once per unique node of a flow tree.

  flow: nil for unique-add itself. For unique-flow, a table:
    check     true: steps 1-4 only, nothing written: returns nil, the action, the jobs a replace
              would supersede, its scheduledAt and the jobs an answer would touch (ojsDecideConflict)
              when the add would go ahead (insert, replace, update, ignore; "replay" for a re-run
              of this very add), the refusal reply otherwise (duplicate / active, id_exists,
              refused_option, counter_id_taken).
              A duplicate found among `inflight` (below) is answered from it.
    nowMs, nowUs  the flow's clock for this node (the same in both passes); nil: Redis TIME.
    joining   the queues earlier nodes will add to the id-claim set (includes/ojs-id-taken).
    inflight  nil or candidates (includes/ojs-decide-conflict) for the nodes of the same flow that
              this check pass has already found will be inserted under the same key: the
              decision sees them as the write pass will see the real jobs.
    detach    nil or how a replace detaches a replaced flow child from its parent (unique-flow:
              the parent's release waits until every node of the flow is in).
  Under a flow, BullMQ's parent arguments (parent key, its dependencies key, the defer flag) are
  passed through to BullMQ's add, which makes the job a dependency of its parent; unique-flow has
  checked the parent exists.
]]
--- @include "includes/ojs-successor-add"
local function ojsUniqueAdd(KEYS, ARGV, flow)
  local nowMs, nowUs
  if flow ~= nil and flow.nowUs ~= nil then
    -- One clock for a node's check and its write: both passes decide at the same instant.
    nowMs, nowUs = flow.nowMs, flow.nowUs
  else
    local time = rcall("TIME")
    nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end

  local rootPrefix = ARGV[4]
  local queueName = ARGV[5]
  local uniquenessKey = ARGV[6]
  local queueSet = ARGV[15]
  local request = ARGV[16]
  -- Duplicate counts, on with ARGV[23] (the `countDuplicates` option): the token to count under, nil for none.
  local countAs = (ARGV[23] == "c" and request) or nil
  local indexKey = KEYS[12]
  local field = string.sub(uniquenessKey, 1, 32)
  local homeQueue = ARGV[18]
  local eventsKey = KEYS[8]

  local policy = ojsReadPolicy(ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[19], ARGV[21])
  local ownPeriod = ARGV[20]

  local args = cmsgpack.unpack(ARGV[1])
  local queueBase = args[BULLMQ_ARG_KEY_PREFIX]
  local customId = args[BULLMQ_ARG_CUSTOM_ID]

  -- 2. The id claim. The backend's ids are OJS ids, unique across queues (ARGV[15]): checked here,
  -- in the script that inserts, so two concurrent enqueues of one id (any queues, with or without a
  -- policy) cannot both pass. A re-run of this very add finds its own token on the job first.
  if customId ~= "" and ojsIdTaken(rootPrefix, queueName, queueBase, customId, queueSet, flow ~= nil and flow.joining or nil) then
    local location = request ~= "" and ojsOwnJob(queueBase, customId, request)
    if location then
      -- A re-run of this very flow goes ahead: its write pass answers with the first run's reply.
      if flow ~= nil and flow.check then return nil, "replay" end
      return ojsReplay(rootPrefix, queueBase, customId, location)
    end
    -- x_successor: the id of this very add's pending successor goes on to its replay (below).
    if not ojsSuccessorOwn(queueBase, customId, request) then return { "id_exists", customId } end
  end

  -- 3. Observe. No policy (ARGV[6] ""): nothing to observe, the decision is an insert.
  local candidates, kept, changed = {}, {}, false
  if uniquenessKey ~= "" then
    local own
    candidates, kept, changed, own = ojsObserve(ojsIndexRead(indexKey, field, homeQueue, rootPrefix), uniquenessKey,
      policy, tonumber(ARGV[17]), nowMs, request, true, countAs ~= nil)
    if own then
      if flow ~= nil and flow.check then return nil, "replay" end
      return ojsReplay(rootPrefix, own.base, own.id, own.location)
    end
  end

  -- 4. Decide, and check what the insert needs.
  local deciding = candidates
  if flow ~= nil and flow.inflight ~= nil then
    deciding = {}
    for _, candidate in ipairs(candidates) do deciding[#deciding + 1] = candidate end
    for _, candidate in ipairs(flow.inflight) do deciding[#deciding + 1] = candidate end
  end
  local action, existing, supersede, scheduledAt, touch, updateFields, dueLimit = ojsDecideConflict(deciding, policy, nowMs)
  local checking = flow ~= nil and flow.check

  if action == "successor" then
    -- BullMQ's finishing script adds a successor to its holder's queue: refused, before any
    -- write, beside another queue's holder (a key without the `queue` dimension); a flow node is
    -- refused before it is sent (bullmq-extensions.ts), here again.
    if existing.base ~= queueBase then return { "successor_queue", existing.queue } end
    if flow ~= nil then return { "refused_option", "unique.x_successor" } end
    return ojsSuccessorAdd(existing, candidates, kept, touch, policy, nowMs, nowUs, KEYS, ARGV, args)
  end
  if action ~= "insert" and action ~= "replace" and action ~= "update" then
    if checking then
      -- Only a refusal stops a flow. One met in the flow itself has nothing stored to touch.
      if action ~= "reject" and action ~= "reject_active" then return nil, action, nil, nil, touch end
      if existing.inflight then return { "duplicate", existing.id, existing.state, existing.queue, nowMs } end
    end
    if ojsTouch(touch, policy, tonumber(ARGV[17]), nowMs) then changed = true end
    if changed then ojsIndexWrite(indexKey, field, kept, homeQueue) end
    ojsKeepArchives(candidates, nowMs)
    -- Duplicate counts: a refusal in a flow's check pass refuses the whole flow or batch, which
    -- writes nothing of its own, so the job that refused it does not count it (request nil).
    return ojsAnswerDuplicate(action, existing, eventsKey, KEYS[3], uniquenessKey, customId, nowMs,
      (not checking and countAs) or nil)
  end

  -- The options are only read to insert (delay, priority): a duplicate never unpacks them.
  local opts = cmsgpack.unpack(ARGV[3])
  -- A parent only through unique-flow, which inserts it and its dependency bookkeeping in the same script.
  if args[BULLMQ_ARG_PARENT_KEY] ~= nil and flow == nil then return { "refused_option", "opts.parent" } end
  if opts[BULLMQ_OPT_DEDUPLICATION] ~= nil then return { "refused_option", "opts.deduplication" } end
  if checking then
    -- A replace with a counter id (queue.add's id, a lone node under a parent) names it first.
    if action == "replace" and customId == "" and rcall("EXISTS", queueBase .. bullmqNextCounterId(KEYS[4])) == 1 then
      return { "counter_id_taken", bullmqNextCounterId(KEYS[4]) }
    end
    return nil, action, supersede, scheduledAt, touch
  end

  if action == "update" then
    -- x_update (includes/ojs-update-job): the existing job takes the new job's values in place,
    -- nothing is inserted; answered like an ignore (the same `deduplicated` event), with what changed.
    local delayMs = tonumber(opts[BULLMQ_OPT_DELAY]) or 0
    -- x_max_wait: never past the cap measured from the job's first add.
    local due = nowMs + delayMs
    if dueLimit ~= nil and dueLimit < due then due = dueLimit end
    local changedFields = ojsUpdateJob(existing, updateFields, { data = ARGV[2], meta = ARGV[13],
      priority = tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0, attempts = tonumber(opts[BULLMQ_OPT_ATTEMPTS]),
      due = due }, nowMs, KEYS)
    ojsTouch(touch, policy, tonumber(ARGV[17]), nowMs)
    ojsIndexWrite(indexKey, field, kept, homeQueue)
    local state, location = ojsLiveJobState(existing.base, existing.id, nowMs)
    existing.state, existing.location = state, location
    local answer = ojsAnswerDuplicate("ignore", existing, eventsKey, KEYS[3], uniquenessKey, customId, nowMs, countAs)
    answer[1] = "updated"
    answer[#answer + 1] = changedFields
    return answer
  end

  local newId = customId
  local eventsMax
  if action == "replace" then
    -- The archive names the job that replaced it before that job exists. Only a replace needs the
    -- id this early, so only a replace pays the GET.
    if newId == "" then
      -- The add script below takes its id from INCR on KEYS[4]; nothing can run in between. A key
      -- already under that id would make BullMQ return that job instead of inserting.
      newId = bullmqNextCounterId(KEYS[4])
      if rcall("EXISTS", queueBase .. newId) == 1 then return { "counter_id_taken", newId } end
    end
    -- Read only by the paths that XADD an event of their own (replace here, duplicates in
    -- ojsAnswerDuplicate): an insert's events are BullMQ's add script's, which reads it itself.
    eventsMax = bullmqMaxEvents(KEYS[3])
  end

  -- 5-6. Writes only from here on.
  local replaced = {}
  local replacedMembers = {}
  if action == "replace" then
    -- x_successor: the replacing job carries the latest add; the key's pending successor (whoever
    -- holds it) would make a second live job of the key once its holder finished.
    ojsSuccessorDropOfKey(kept)
    for _, duplicate in ipairs(supersede) do
      if duplicate.state == "completed" or duplicate.state == "discarded" or duplicate.state == "cancelled" then
        -- A terminal state is never left: the finished job keeps its state, result, times and its
        -- place in BullMQ's set; only the key leaves it (below).
        replaced[#replaced + 1] = { duplicate.id, duplicate.queue, duplicate.state,
          ojsReadJob(duplicate.base, duplicate.id, duplicate.location) }
      else
        -- The `removed` event goes to the stream of the queue the job was in (another queue when
        -- the policy has no `queue` dimension); `deduplicated` events go to the adding queue's.
        ojsArchiveJob(duplicate.base, duplicate.id, duplicate.location, duplicate.state, newId, "ojs-replaced",
          nowMs, tonumber(ARGV[14]), duplicate.base .. "events", eventsMax, (flow ~= nil and flow.detach) or ojsDetachChild)
        replaced[#replaced + 1] = { duplicate.id, duplicate.queue, "cancelled",
          ojsReadJob(duplicate.base, duplicate.id, "archive") }
      end
      -- Superseded: no later add counts it, so the work of an add never grows with the key's
      -- replaced history (includes/ojs-observe keeps the entry for the replay grace only).
      if duplicate.entry ~= nil then duplicate.entry.bits, duplicate.entry.periodEnd = OJS_SUPERSEDED_BIT, 0 end
      replacedMembers[#replacedMembers + 1] = duplicate.queue .. ":" .. duplicate.id
    end
  end

  args[BULLMQ_ARG_TIMESTAMP] = nowMs
  if scheduledAt ~= nil then opts[BULLMQ_OPT_DELAY] = math.max(scheduledAt - nowMs, 1) end
  -- The tables as they are: the spliced scripts' cmsgpack takes them (bullmq-script-set.ts).
  local bullmqArgv = { args, ARGV[2], opts }
  local delay = tonumber(opts[BULLMQ_OPT_DELAY]) or 0
  local result = ojsBullMQAdd(KEYS, bullmqArgv, delay, tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0)
  if type(result) == "number" and result < 0 then return { "bullmq_error", result } end

  local jobId = tostring(result)
  local fields = {}
  if uniquenessKey ~= "" then
    local bits = tonumber(ARGV[17])
    local periodEnd = 0
    if policy.fixedMs ~= nil then
      -- The anchor at insert: created_at, or the due time under x_period_anchor "scheduled_at"
      -- (the last duplicate attempt starts as created_at).
      local anchor = nowMs
      if policy.anchor == "scheduled_at" then anchor = nowMs + delay end
      periodEnd = ojsPeriodEnd(anchor, policy.years, policy.months, policy.fixedMs)
    end
    fields = { "ojsKey", uniquenessKey, "ojsPolicy", ARGV[12] }
    if ownPeriod ~= "" then
      bits = bits + OJS_ANCHORED_BIT
      fields[#fields + 1] = "ojsPeriod"
      fields[#fields + 1] = ownPeriod
    end
    if ARGV[13] ~= "" then
      fields[#fields + 1] = "ojsMeta"
      fields[#fields + 1] = ARGV[13]
    end
    -- Read only when the job is archived (includes/ojs-own-policy): a policy counting `cancelled`
    -- keeps its archive for its window.
    if ojsHasBit(bits, OJS_TERMINAL_BITS.cancelled) then
      fields[#fields + 1] = "ojsOwn"
      fields[#fields + 1] = (periodEnd == 0 and "") or string.format("%.0f", periodEnd)
    end
    -- The superseded jobs' entries stay for the replay grace (a re-sent add finds its token
    -- there); observing or the sweep drops them after it.
    kept[#kept + 1] = ojsIndexEntry(nowUs, queueName, jobId, bits, periodEnd, homeQueue, rootPrefix)
    ojsIndexWrite(indexKey, field, kept, homeQueue)
  end
  if request ~= "" then
    fields[#fields + 1] = "ojsReq"
    fields[#fields + 1] = request
  end
  if #replacedMembers > 0 then
    fields[#fields + 1] = "ojsReplaced"
    fields[#fields + 1] = cjson.encode(replacedMembers)
  end
  if #fields > 0 then rcall("HSET", queueBase .. jobId, unpack(fields)) end
  -- The queue joins the set its ids are claimed across with its first insert, not before: a
  -- refused add leaves no trace there.
  if queueSet ~= "" then rcall("SADD", queueSet, queueName) end

  -- 7. The sweep. Each insert adds one entry that will be dead some day, so each insert draws a
  -- few fields and drops their dead entries: amortised O(1), and dead entries stay a fraction of
  -- the live ones whatever BullMQ's retention keeps. Random draws rather than an HSCAN cursor: a
  -- small hash is a listpack, which HSCAN returns whole at every call.
  if uniquenessKey ~= "" and OJS_SWEEP_SAMPLES > 0 then ojsSweep(indexKey, field, homeQueue, rootPrefix, nowMs, OJS_SWEEP_SAMPLES) end

  if action == "replace" then return { "replaced", jobId, nowMs, replaced } end
  return { "created", jobId, nowMs }
end
