--[[
  ojsSuccessorAdd(existing, candidates, kept, touch, policy, nowMs, nowUs, KEYS, ARGV, args) -> reply

  unique-add's answer to the `successor` decision (x_successor: `existing` is the key's active
  job, in the adding queue; includes/ojs-decide-conflict), after every check of steps 1-4:
    1. The successor's id: the add's own (step 2 found it free, or this add's own pending
       successor's), else the queue's next counter id (refused as a replace's is, "counter_id_taken",
       when a job already has it); a re-sent add (its token on the pending successor) keeps the
       first run's id.
    2. Stored as the holder's pending successor, replacing any (includes/ojs-successor,
       ojsSuccessorKeep), with the OJS fields its promotion adopts; the key's index field lists
       it instead of the one it replaced.
    3. As an ignore: under x_period_anchor "last_duplicate" now recorded on every duplicate, the
       key's entries written back, the `deduplicated` event; then
         { "successor", existingId, existingState, existingQueue, nowMs, existingHash, successorId }
]]
--- @include "includes/ojs-successor"
local function ojsSuccessorAdd(existing, candidates, kept, touch, policy, nowMs, nowUs, KEYS, ARGV, args)
  local uniquenessKey, request, customId = ARGV[6], ARGV[16], args[BULLMQ_ARG_CUSTOM_ID]
  local opts = cmsgpack.unpack(ARGV[3])
  if opts[BULLMQ_OPT_DEDUPLICATION] ~= nil then return { "refused_option", "opts.deduplication" } end
  local pendingId, pendingRequest = ojsSuccessorPending(existing.base, existing.id)
  local successorId = customId
  if request ~= "" and pendingRequest == request then
    successorId = pendingId
  elseif successorId == "" then
    successorId = bullmqNextCounterId(KEYS[4])
    if rcall("EXISTS", existing.base .. successorId) == 1 or ojsSuccessorTaken(existing.base, successorId) then
      return { "counter_id_taken", successorId }
    end
    rcall("INCR", KEYS[4])
  end

  if successorId ~= pendingId then
    local ojs = { key = uniquenessKey, policy = ARGV[12], req = request, meta = ARGV[13], period = ARGV[20],
      bits = tonumber(ARGV[17]), anchor = policy.anchor }
    if policy.fixedMs ~= nil then ojs.win = { policy.years, policy.months, policy.fixedMs } end
    local replaced = ojsSuccessorKeep(existing, successorId, args[3], ARGV[2], opts, ojs, request, ARGV[1])
    local entries = {}
    for _, entry in ipairs(kept) do
      if not (entry.id == replaced and entry.base == existing.base) then entries[#entries + 1] = entry end
    end
    entries[#entries + 1] = ojsIndexEntry(nowUs, existing.queue, successorId, 0, 0, ARGV[18], ARGV[4])
    kept = entries
  end
  ojsTouch(touch, policy, tonumber(ARGV[17]), nowMs)
  ojsIndexWrite(KEYS[12], string.sub(uniquenessKey, 1, 32), kept, ARGV[18])
  ojsKeepArchives(candidates, nowMs)
  local answer = ojsAnswerDuplicate("ignore", existing, KEYS[8], KEYS[3], uniquenessKey, customId, nowMs,
    (ARGV[23] == "c" and request) or nil)
  answer[1] = "successor"
  answer[#answer + 1] = successorId
  return answer
end
