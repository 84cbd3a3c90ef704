--[[
  unique-probe: the duplicate half of unique-add, without the job. Answers an add that would
  insert nothing exactly as unique-add would (same reply, same `deduplicated` event), and says
  "miss" otherwise, having written nothing: the caller then sends the full unique-add, which
  observes and decides again, atomically with its insert. So a probe can only ever save work;
  it never decides an insert.

  Why it exists: a duplicate sent as a unique-add pays for the whole job first — BullMQ's job
  encoding in Node, and the long command carrying the data — although nothing will be
  stored. The adapter sends a probe only for a `reject`/`ignore` add whose fingerprint it met as
  a duplicate moments ago (bullmq-probe-hints.ts), i.e. when another duplicate is
  likely; a wrong guess costs this small script and one round trip.

  Input:
    KEYS[1]  the index hash (as unique-add's KEYS[12])
    KEYS[2]  the adding queue's events stream
    KEYS[3]  the adding queue's meta hash (opts.maxLenEvents)

    ARGV[1]  root key prefix with its colon ("bull:")
    ARGV[2]  this queue's name
    ARGV[3]  this queue's key base ("bull:emails:")
    ARGV[4]  the caller's job id, "" for a counter id
    ARGV[5]  "" or the prefix's queue set (as unique-add's ARGV[15])
    ARGV[6]  uniqueness key (§4)
    ARGV[7]  on_conflict: reject | ignore (a replace always writes: never probed)
    ARGV[8]  policy states, comma-separated
    ARGV[9]  period years, "" when the policy has no period
    ARGV[10] period months
    ARGV[11] period fixed part in ms
    ARGV[12] the terminal states the policy counts, as index bits (as unique-add's ARGV[17])
    ARGV[13] the index's home queue (as unique-add's ARGV[18])
    ARGV[14] x_period_anchor (as unique-add's ARGV[19])
    ARGV[15] "n": a policy the native path serves, for an add unique-add would try it for (as
             unique-add's ARGV[22]): while the key has no index field, its one job is the one
             BullMQ's deduplication key names (includes/ojs-native-holder), read as the native
             path reads it instead of observing; "" otherwise
    ARGV[16] the add's request token (as unique-add's ARGV[16]): with ARGV[17], a duplicate
             answered here is counted on the existing job once (includes/ojs-count-duplicate)
    ARGV[17] "c": count duplicates (as unique-add's ARGV[23]); "": nothing counted
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): as unique-add's

  Steps:
    1. now = Redis TIME (the clock unique-add uses).
    2. A caller's id already in use -> "id_exists" (unique-add checks it first too).
    3. Observe the key's jobs (includes/ojs-observe, which only reads) and decide
       (includes/ojs-decide-conflict). With ARGV[15] "n" and no index field for the key: the
       native holder, a duplicate (answered as in 4), or "miss", as unique-add's native path
       would decide.
    4. ignore / reject -> under x_period_anchor "last_duplicate", now recorded on every
       duplicate (ojsTouch: the job's `ojsLast`, its entry's period end), as unique-add would;
       the key's entries written back, none dropped, when this policy widened or touched one
       (so the sweep keeps a finished job this policy counts), then
       includes/ojs-answer-duplicate; insert -> "miss", nothing written.
  The probe writes only what unique-add would write for the same duplicate answer, and never
  drops an entry: a probe answered here leaves Redis as the full add would have, but for the
  entries the full add would have dropped.

  Output:
    { "miss" }                                   nothing written
    { "id_exists", jobId }
    { "ignored", existingId, existingState, existingQueue, nowMs, existingHash }
    { "duplicate", existingId, existingState, existingQueue, nowMs }

  All-or-nothing: it writes only after deciding: HSETs of hash fields (the index field, `ojsLast`),
  a PEXPIRE of an archive, and the XADD of the answer, none of which can fail.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-decide-conflict"
--- @include "includes/ojs-read-job"
--- @include "includes/ojs-split-member"
--- @include "includes/ojs-read-policy"
--- @include "includes/ojs-id-taken"
--- @include "includes/ojs-index"
--- @include "includes/ojs-observe"
--- @include "includes/ojs-answer-duplicate"
--- @include "includes/ojs-native-holder"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()

local rootPrefix = ARGV[1]
local customId = ARGV[4]
local uniquenessKey = ARGV[6]

if customId ~= "" and ojsIdTaken(rootPrefix, ARGV[2], ARGV[3], customId, ARGV[5]) then
  return { "id_exists", customId }
end

local field = string.sub(uniquenessKey, 1, 32)
-- The native path's key (ARGV[15]): its holder read as the native path reads it, without the
-- index's reads of observing it as an entry.
if ARGV[15] == "n" and rcall("HEXISTS", KEYS[1], field) == 0 then
  local holder, state, location, _, dup = ojsNativeHolder(ARGV[3], field, uniquenessKey, nowMs, ARGV[17] == "c")
  if not holder then return { "miss" } end
  local existing = { id = holder, queue = ARGV[2], base = ARGV[3], state = state, location = location, dup = dup }
  return ojsAnswerDuplicate((ARGV[7] == "ignore" and "ignore") or "reject", existing, KEYS[2], KEYS[3], uniquenessKey,
    customId, nowMs, (ARGV[17] == "c" and ARGV[16]) or nil)
end
local policy = ojsReadPolicy(ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[14])
local entries = ojsIndexRead(KEYS[1], field, ARGV[13], rootPrefix)
local candidates, _, _, _, widened = ojsObserve(entries, uniquenessKey, policy, tonumber(ARGV[12]), nowMs, "", true, ARGV[17] == "c")
local action, existing, _, _, touch = ojsDecideConflict(candidates, policy, nowMs)
if action == "ignore" or action == "reject" then
  if ojsTouch(touch, policy, tonumber(ARGV[12]), nowMs) then widened = true end
  -- Only a widening (or a touch) is written, with every entry: dropping is left to unique-add, so
  -- that a duplicate answered here forgets no more than the full add would have.
  if widened then ojsIndexWrite(KEYS[1], field, entries, ARGV[13]) end
  ojsKeepArchives(candidates, nowMs)
  return ojsAnswerDuplicate(action, existing, KEYS[2], KEYS[3], uniquenessKey, customId, nowMs,
    (ARGV[17] == "c" and ARGV[16]) or nil)
end
return { "miss" }
