--[[
  unique-add: the OJS unique-jobs check and BullMQ's own add, in one script.

  BullMQ's add scripts (addStandardJob-9, addDelayedJob-6, addPrioritizedJob-9) are NOT copied:
  the adapter takes them from the installed bullmq at start-up and splices each in where a
  `--- @bullmq "<name>"` line stands, as `local function __bullmq_<name>(ARGV) ... end`, whose
  first line builds that script's KEYS from this script's by name (bullmq-host.ts,
  BULLMQ_ADD_SCRIPTS). The local KEYS and ARGV shadow the globals, so their bodies run unchanged.
  `--- @bullmq-host` stands for the BullMQ facts the scripts use (bullmq-host.ts, BULLMQ_LUA).
  Rewriting BullMQ's add scripts was rejected: about ten includes (id counter,
  markers, paused/maxed, priority counter, delayed score, events) would have to be kept in step
  with every BullMQ release, and a mistake there means jobs that silently never run.

  Input:
    KEYS[1]  wait         KEYS[2]  paused      KEYS[3]  meta      KEYS[4] id
    KEYS[5]  completed    KEYS[6]  delayed     KEYS[7]  active    KEYS[8] events
    KEYS[9]  marker       KEYS[10] prioritized KEYS[11] pc
    KEYS[12] the index hash the key's jobs are listed in (includes/ojs-index): the queue's, or
             the prefix's for a policy without the `queue` dimension

    ARGV[1]  BullMQ's msgpacked args (key prefix, custom id, name, timestamp, …), as BullMQ encoded them
    ARGV[2]  job data (JSON)
    ARGV[3]  BullMQ's msgpacked options
    ARGV[4]  root key prefix with its colon ("bull:"), to find jobs of other queues
    ARGV[5]  this queue's name
    ARGV[6]  uniqueness key (§4); "" = no policy: only the id claim of step 2 and BullMQ's add
             (the backend's plain enqueue with a caller-chosen id; KEYS[12] unused)
    ARGV[7]  on_conflict: reject | ignore | replace | replace_except_schedule
    ARGV[8]  policy states, comma-separated OJS states
    ARGV[9]  period years, "" when the policy has no period
    ARGV[10] period months
    ARGV[11] period fixed part in ms (weeks … seconds)
    ARGV[12] the policy without its defaults (compactUniquePolicy, JSON), stored on the job as ojsPolicy
    ARGV[13] OJS meta (JSON), stored on the job as ojsMeta; "" = none (`{}`), nothing stored
    ARGV[14] retention in ms of the archive of a job this add cancels, when the job's own policy
             does not need it longer (includes/ojs-own-policy); 0 = no expiry
    ARGV[15] "" or the prefix's queue set (<prefix>:ojs:global:queues): a custom id must then be
             new in every queue of that set, not only in this one (the backend's OJS ids); an
             insert adds this queue to the set, in this script, so a refused add registers nothing
    ARGV[16] the add's request token, made by the client ("" = none): stored on the inserted job
             as `ojsReq` (see "Idempotent")
    ARGV[17] the terminal states the policy counts, as index bits (includes/ojs-own-policy)
    ARGV[18] the index's home queue (entries of its jobs omit the queue name): this queue's name
             in NFC for a per-queue index, "" for the prefix's
    ARGV[19] x_period_anchor: "" (created_at) | scheduled_at | last_duplicate
    ARGV[20] "" or, for an anchored policy with a period, its period as the job hash keeps it
             (`ojsPeriod`, includes/ojs-own-policy): the index then recomputes the job's window
             end from its current anchor
    ARGV[21] x_update: "" = none, else JSON { state: [field, …] } (fields in UPDATE_FIELDS order)

  Steps (1-4 only read; every write comes after the last check, in 5-7):
    1. now = Redis TIME. It becomes the new job's `timestamp` (OJS created_at) and is the `now`
       of the period check: one clock for both, whatever the producers' clocks say (§7.2).
    2. A custom id that already exists (live or archived; in this queue, or with ARGV[15] in any
       queue of the set) -> "id_exists", nothing written; unless this add's own token inserted
       it -> the first run's reply (idempotent).
    3. Observe every job of the key's index entries with its OJS state (includes/ojs-observe): a
       job carrying this add's token -> the first run's reply, nothing written. The entries no
       decision can need again are left out of the field to write back (O(entries of this key),
       never O(queue depth)): their job is gone or the id now holds another job, or the job is
       finished and neither its own policy nor this add's counts it.
    4. Decide (includes/ojs-decide-conflict, the twin of the core's decideUniqueConflict). For an
       insert or replace, check what BullMQ's add needs to insert without a failure code: no
       parent (its only refusal, -5; the adapter never sends one) and no `de` option (BullMQ's
       deduplication, which could return another job instead of inserting); and, for a replace
       with a counter id, that the id it is about to name is free.
    5. ignore / reject / reject_active -> under x_period_anchor "last_duplicate", record now on
                  every duplicate (`ojsLast`, includes/ojs-observe ojsTouch, a reject too); write
                  the key's entries back if observing or touching changed them, and keep the
                  archive of a widened cancelled entry as long as it now counts (ojsKeepArchives);
                  (includes/ojs-answer-duplicate)
                  XADD `deduplicated` (BullMQ's own event name and fields: jobId = the existing
                  job, deduplicatedJobId = the incoming id, "" for a counter id), nothing inserted.
    5'. update (x_update) -> the existing job updated in place (includes/ojs-update-job, with
                  BullMQ's own changePriority / changeDelay / promote spliced), now recorded as
                  for ignore under "last_duplicate", the key's entries written back, and the
                  `deduplicated` event; nothing inserted.
    6. insert  -> BullMQ add (the variant BullMQ itself would pick: delay > priority >
                  standard), then the OJS fields on the job hash (ojsKey, ojsPolicy, ojsReq;
                  ojsMeta when not empty; ojsOwn when the policy counts `cancelled`; ojsPeriod
                  for an anchored policy with a period) and the key's
                  index field with the new entry; with no policy (ARGV[6] "") BullMQ's add and
                  ojsReq.
       replace -> the same, after archiving every duplicate (includes/ojs-archive-job; one
                  already cancelled is re-labelled, as the core does); the new job also records
                  the ids it replaced (ojsReplaced). replace_except_schedule over a scheduled job
                  gives the new job that job's due time.
    7. After an insert, the sweep (includes/ojs-index, ojsSweep): a fixed number of index fields
       drawn at random lose the entries no policy can count any more (bounded work, no scans).

  All-or-nothing, by construction: steps 1-4 read only, and every check that can refuse the add
  is among them. The writes of 5-7 cannot fail: archiving acts on keys step 3 saw exist, BullMQ's
  add has been checked for its one refusal (and returns the id it inserted), and the rest are
  HSET/HDEL/SADD/XADD on keys of their own type. An update's moves are BullMQ's own scripts acting
  on a job step 3 saw, in the list or set step 3 found it in, which excludes their failure codes
  (includes/ojs-update-job). An unexpected failure code from BullMQ's add is
  still checked before any OJS field is written, but by then a replace has archived: hence the
  precondition checks in 4 rather than a test afterwards.

  Idempotent: ioredis re-sends a command whose reply was lost to a reconnect, so this script can
  run twice for one add. The second run finds its token (step 2 by id, step 3 in the key's index
  entries) and returns the first run's reply (includes/ojs-replay), writing nothing: the same job
  id, the same outcome, the same replaced ids. Recognised while the inserted job is in the key's
  index entries (a live or failed job always is, a finished one for the replay grace after it
  finished: includes/ojs-index, OJS_REPLAY_GRACE_MS) or, for a custom id, while the job or its
  archive exists; a first run that inserted nothing wrote nothing to recognise, and deciding again is as
  if the add had come a moment later.

  Output:
    { "created", jobId, nowMs }
    { "ignored", existingId, existingState, existingQueue, nowMs, existingHash }
    { "duplicate" | "active", existingId, existingState, existingQueue, nowMs }
    { "updated", existingId, existingState, existingQueue, nowMs, existingHash, { field, … } }
                                x_update: the existing job after the update, and what changed
    { "replaced", jobId, nowMs, { { id, queue, prevState, archiveHash }, … } }
    { "id_exists", jobId }
    { "refused_option", path }  an option BullMQ's add would not insert with, nothing written
    { "counter_id_taken", id }  a replace's counter id already names a job (step 4), nothing written
    { "bullmq_error", code }    BullMQ's add returned a negative code (its causes are checked in
                                step 4, so never expected; a replace has archived by then)
]]
local rcall = redis.call
-- Index fields the sweep draws per insert (includes/ojs-index): dead entries settle at about
-- 1/(k-1) of the live ones: 4 keeps a steady workload's dead entries at a third of the live ones
-- (docs/design/bullmq.md) for a few more HMGETs per insert.
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
--- @bullmq "changePriority"
--- @bullmq "changeDelay"
--- @bullmq "promote"
-- After the spliced scripts it calls.
--- @include "includes/ojs-update-job"

local time = rcall("TIME")
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])

local rootPrefix = ARGV[4]
local queueName = ARGV[5]
local uniquenessKey = ARGV[6]
local queueSet = ARGV[15]
local request = ARGV[16]
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
if customId ~= "" and ojsIdTaken(rootPrefix, queueName, queueBase, customId, queueSet) then
  local location = request ~= "" and ojsOwnJob(queueBase, customId, request)
  if location then return ojsReplay(rootPrefix, queueBase, customId, location) end
  return { "id_exists", customId }
end

-- 3. Observe. No policy (ARGV[6] ""): nothing to observe, the decision is an insert.
local candidates, kept, changed = {}, {}, false
if uniquenessKey ~= "" then
  local own
  candidates, kept, changed, own = ojsObserve(ojsIndexRead(indexKey, field, homeQueue, rootPrefix), uniquenessKey,
    policy, tonumber(ARGV[17]), nowMs, request)
  if own then return ojsReplay(rootPrefix, own.base, own.id, own.location) end
end

-- 4. Decide, and check what the insert needs.
local action, existing, cancel, scheduledAt, touch, updateFields = ojsDecideConflict(candidates, policy, nowMs)

if action ~= "insert" and action ~= "replace" and action ~= "update" then
  if ojsTouch(touch, policy, tonumber(ARGV[17]), nowMs) then changed = true end
  if changed then ojsIndexWrite(indexKey, field, kept, homeQueue) end
  ojsKeepArchives(candidates, nowMs)
  return ojsAnswerDuplicate(action, existing, eventsKey, KEYS[3], uniquenessKey, customId, nowMs)
end

-- The options are only read to insert (delay, priority): a duplicate never unpacks them.
local opts = cmsgpack.unpack(ARGV[3])
if args[BULLMQ_ARG_PARENT_KEY] ~= nil then return { "refused_option", "opts.parent" } end
if opts[BULLMQ_OPT_DEDUPLICATION] ~= nil then return { "refused_option", "opts.deduplication" } end

if action == "update" then
  -- x_update (includes/ojs-update-job): the existing job takes the new job's values in place,
  -- nothing is inserted; answered like an ignore (the same `deduplicated` event), with what changed.
  local delayMs = tonumber(opts[BULLMQ_OPT_DELAY]) or 0
  local changedFields = ojsUpdateJob(existing, updateFields, { data = ARGV[2], meta = ARGV[13],
    priority = tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0, attempts = tonumber(opts[BULLMQ_OPT_ATTEMPTS]),
    due = nowMs + delayMs }, nowMs)
  ojsTouch(touch, policy, tonumber(ARGV[17]), nowMs)
  ojsIndexWrite(indexKey, field, kept, homeQueue)
  local state, location = ojsLiveJobState(existing.base, existing.id, nowMs)
  existing.state, existing.location = state, location
  local answer = ojsAnswerDuplicate("ignore", existing, eventsKey, KEYS[3], uniquenessKey, customId, nowMs)
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
  for _, duplicate in ipairs(cancel) do
    -- The `removed` event goes to the stream of the queue the job was in (another queue when the
    -- policy has no `queue` dimension); `deduplicated` events go to the adding queue's.
    ojsArchiveJob(duplicate.base, duplicate.id, duplicate.location, duplicate.state, newId, "ojs-replaced",
      nowMs, tonumber(ARGV[14]), duplicate.base .. "events", eventsMax)
    replaced[#replaced + 1] = { duplicate.id, duplicate.queue, duplicate.state,
      ojsReadJob(duplicate.base, duplicate.id, "archive") }
    replacedMembers[#replacedMembers + 1] = duplicate.queue .. ":" .. duplicate.id
  end
end

args[BULLMQ_ARG_TIMESTAMP] = nowMs
local packedOpts = ARGV[3]
if scheduledAt ~= nil then
  opts[BULLMQ_OPT_DELAY] = math.max(scheduledAt - nowMs, 1)
  packedOpts = cmsgpack.pack(opts)
end
local bullmqArgv = { cmsgpack.pack(args), ARGV[2], packedOpts }
local delay = tonumber(opts[BULLMQ_OPT_DELAY]) or 0
local priority = tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0
local result
if delay > 0 then
  result = __bullmq_addDelayedJob(bullmqArgv)
elseif priority ~= 0 then
  result = __bullmq_addPrioritizedJob(bullmqArgv)
else
  result = __bullmq_addStandardJob(bullmqArgv)
end
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
  -- The replaced jobs' entries stay: archived, they are `cancelled`, which a later policy may
  -- count; observing or the sweep drops them once none does.
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
