--[[
  ojsNativeAdd(KEYS, ARGV) -> reply, or nil to take the general path

  The native path of unique-add (lua/unique-add-12.lua: KEYS, ARGV and replies are its own), for
  the policies BullMQ's own deduplication key answers exactly (bullmq-native-path.ts, ARGV[22]):
  the uniqueness key has the `queue` dimension, the states are the default (live) ones, no
  period, `reject` or `ignore`, no x_ extension.

  BullMQ's deduplication key `<base>de:<id>` holds the id of the job that set it, and BullMQ's
  own scripts delete it when that job completes, fails for good or is removed (the job hash's
  `deid` names it: moveToFinished, removeJob; a host fact with its contract test). For a policy
  that counts exactly the live states, "a job holds the key" is then "the deduplication key
  names a job": one GET instead of the index's read, observation and sweep. The native path sets
  `de:<field>` (the key's first 32 hex digits, as the index's field) to the job it inserts and
  `deid` on its hash, and leaves the rest to BullMQ. The holder is this key's only while its hash
  carries the full key (`ojsKey`), as for an index entry.

  Both paths see each other's jobs of one key. The general path never sets the deduplication
  key; every job it inserts has an entry in its key's index field, and it reads the native
  holder as one of the key's jobs (includes/ojs-index, ojsIndexRead). So while the field exists
  this returns nil, having read only: the general path decides with every job of the key. A
  native job that finished or was removed has no field and no deduplication key: no later add
  sees it (docs/bullmq.md, "Two paths").

  Steps (1-3 only read):
    1. now = Redis TIME. Written again by ioredis after a lost reply (ARGV[22] "r"): a job of this
       key carrying this add's token that finished within the replay grace (the newest
       OJS_NATIVE_REPLAY_SCAN of `completed` and of `failed`) -> the first run's reply. Then,
       the key's index field exists -> nil.
    2. A custom id already in use -> "id_exists", unless this add's own token inserted it -> the
       first run's reply.
    3. The deduplication key names a live job carrying this key (includes/ojs-native-holder) -> a
       duplicate: this add's own token on it -> the first run's reply; else ignore / reject,
       answered as the general path answers them (includes/ojs-answer-duplicate: `deduplicated`
       event, reply). A key naming a job that is gone, finished or of another key is stale:
       overwritten by the insert.
    4. Insert: BullMQ's add (the variant BullMQ would pick), with the OJS fields and `deid` in its
       own HMSET of the job hash (an HSET after it on a BullMQ without the hook), and SET the
       deduplication key to its id (no expiry: BullMQ deletes it).
  All-or-nothing as the general path: every refusal is in 1-3 or is BullMQ's add's own (a parent,
  BullMQ's own `deduplication`), checked before it runs; then a SET.
]]
--- @include "includes/ojs-now"
--- @include "includes/ojs-native-holder"
-- A re-sent add's own job among the jobs of `set` (completed or failed, scored by finishedOn)
-- that finished within the replay grace, newest first, at most OJS_NATIVE_REPLAY_SCAN of them.
local OJS_NATIVE_REPLAY_SCAN = 1000
local function ojsFinishedOwnJob(queueBase, set, uniquenessKey, request, nowMs)
  local ids = rcall("ZREVRANGEBYSCORE", queueBase .. set, "+inf", nowMs - OJS_REPLAY_GRACE_MS, "LIMIT", 0, OJS_NATIVE_REPLAY_SCAN)
  for _, id in ipairs(ids) do
    local own = rcall("HMGET", queueBase .. id, "ojsReq", "ojsKey")
    if own[1] == request and own[2] == uniquenessKey then return id end
  end
  return nil
end

local function ojsNativeAdd(KEYS, ARGV)
  local uniquenessKey = ARGV[6]
  local field = string.sub(uniquenessKey, 1, 32)
  local nowMs = ojsNowMs()
  local rootPrefix, queueName, request = ARGV[4], ARGV[5], ARGV[16]
  local args = cmsgpack.unpack(ARGV[1])
  local queueBase = args[BULLMQ_ARG_KEY_PREFIX]

  -- Written again after a lost reply: the first run's job may have finished since, and with it
  -- went its deduplication key. Only a re-sent add pays for this look.
  if ARGV[22] == "r" and request ~= "" then
    local own = ojsFinishedOwnJob(queueBase, "completed", uniquenessKey, request, nowMs)
      or ojsFinishedOwnJob(queueBase, "failed", uniquenessKey, request, nowMs)
    if own then return ojsReplay(rootPrefix, queueBase, own, "live") end
  end
  if rcall("HEXISTS", KEYS[12], field) == 1 then return nil end
  local customId = args[BULLMQ_ARG_CUSTOM_ID]

  if customId ~= "" and ojsIdTaken(rootPrefix, queueName, queueBase, customId, "", nil) then
    local location = request ~= "" and ojsOwnJob(queueBase, customId, request)
    if location then return ojsReplay(rootPrefix, queueBase, customId, location) end
    return { "id_exists", customId }
  end

  local holder, state, location, holderRequest, dup = ojsNativeHolder(queueBase, field, uniquenessKey, nowMs, ARGV[23] == "c")
  if holder then
    if request ~= "" and holderRequest == request then return ojsReplay(rootPrefix, queueBase, holder, "live") end
    local existing = { id = holder, queue = queueName, base = queueBase, state = state, location = location, dup = dup }
    return ojsAnswerDuplicate((ARGV[7] == "ignore" and "ignore") or "reject", existing, KEYS[8], KEYS[3],
      uniquenessKey, customId, nowMs, (ARGV[23] == "c" and request) or nil)
  end

  local opts = cmsgpack.unpack(ARGV[3])
  if args[BULLMQ_ARG_PARENT_KEY] ~= nil then return { "refused_option", "opts.parent" } end
  if opts[BULLMQ_OPT_DEDUPLICATION] ~= nil then return { "refused_option", "opts.deduplication" } end

  args[BULLMQ_ARG_TIMESTAMP] = nowMs
  local fields = { "ojsKey", uniquenessKey, "ojsPolicy", ARGV[12], "ojsReq", request, "deid", field }
  if ARGV[13] ~= "" then fields[9], fields[10] = "ojsMeta", ARGV[13] end
  -- The tables as they are: the spliced scripts' cmsgpack takes them; the OJS fields go in
  -- BullMQ's own HMSET of the job hash when the installed BullMQ takes the hook (bullmq-script-set.ts).
  local bullmqArgv = { args, ARGV[2], opts }
  if BULLMQ_STORES_OJS_FIELDS then bullmqArgv.ojsFields = fields end
  local result = ojsBullMQAdd(KEYS, bullmqArgv, tonumber(opts[BULLMQ_OPT_DELAY]) or 0, tonumber(opts[BULLMQ_OPT_PRIORITY]) or 0)
  if type(result) == "number" and result < 0 then return { "bullmq_error", result } end

  local jobId = tostring(result)
  if not BULLMQ_STORES_OJS_FIELDS then rcall("HSET", queueBase .. jobId, unpack(fields)) end
  rcall("SET", queueBase .. "de:" .. field, jobId)
  return { "created", jobId, nowMs, field }
end
