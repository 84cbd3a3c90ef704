--[[
  unique-native-add: unique-add (lua/unique-add-12.lua) for an add that takes the native path
  first (its ARGV[22] "n" or "r"), sent with only the arguments that path reads. Same KEYS, same
  steps, replies and events: the script hands unique-add's own functions an ARGV table holding
  what unique-add would have been sent for such an add (bullmq-enqueue.ts, preparedAdd), so the
  native path (includes/ojs-native-add) and, when the key has an index field, the general path
  (includes/ojs-unique-add) run unchanged.

  Why a script of its own: Redis turns every argument of a call into a Lua string before the
  script runs; unique-add takes 38 keys and arguments (the layout check
  included), of which the native path reads 28. The rest are fixed for a policy the native path serves (bullmq-native-path.ts: the
  `queue` dimension, the default states, no period, `reject` or `ignore`, no x_ extension; a lone
  add, no id claimed across queues, to a queue whose name is in NFC): they are filled in below.

  Input:
    KEYS[1..12]  as unique-add's (the queue's keys, then the queue's index hash)

    ARGV[1]  BullMQ's msgpacked args            (unique-add's ARGV[1])
    ARGV[2]  job data (JSON)                    (ARGV[2])
    ARGV[3]  BullMQ's msgpacked options         (ARGV[3])
    ARGV[4]  root key prefix with its colon     (ARGV[4])
    ARGV[5]  this queue's name                  (ARGV[5]; also the index's home queue, ARGV[18])
    ARGV[6]  uniqueness key                     (ARGV[6])
    ARGV[7]  on_conflict: reject | ignore       (ARGV[7])
    ARGV[8]  policy states, comma-separated     (ARGV[8]: the default ones)
    ARGV[9]  the policy without its defaults    (ARGV[12])
    ARGV[10] OJS meta (JSON), "" = none         (ARGV[13])
    ARGV[11] the add's request token            (ARGV[16])
    ARGV[12] "n", or "r" when written again after a lost reply (ARGV[22]; bullmq-script-set.ts)
    ARGV[13] "c" to count a duplicate (the `countDuplicates` option), else "" (ARGV[23])
    ARGV[last]  the layout check (includes/ojs-layout), as unique-add's: the queue's namespace

  Filled in: no period (ARGV[9..11] ""), no archive retention (ARGV[14] 0: a reject or ignore
  archives nothing), no queue set (ARGV[15] ""), no terminal state counted (ARGV[17] 0), no
  anchor, anchored period or update (ARGV[19..21] "").

  Output: unique-add's, but "created" as one string: "created:<nowMs>:<deduplication id or "">:<jobId>".
]]
local rcall = redis.call
-- As unique-add's (the general path this script falls back on sweeps too).
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
--- @bullmq "changePriority"
--- @bullmq "changeDelay"
--- @bullmq "promote"
-- After the spliced scripts it calls.
--- @include "includes/ojs-update-job"
--- @bullmq-raw "releaseParentIfNoPendingDependencies"
--- @include "includes/ojs-detach-child"
--- @include "includes/ojs-unique-add"
--- @include "includes/ojs-native-add"
--- @include "includes/ojs-layout"

local layoutRefusal, layoutMissing = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local queueName = ARGV[5]
-- unique-add's ARGV for this add.
local argv = { ARGV[1], ARGV[2], ARGV[3], ARGV[4], queueName, ARGV[6], ARGV[7], ARGV[8], "", "", "", ARGV[9], ARGV[10],
  "0", "", ARGV[11], "0", queueName, "", "", "", ARGV[12], ARGV[13] }
local reply = ojsNativeAdd(KEYS, argv)
if reply == nil then reply = ojsUniqueAdd(KEYS, argv, nil) end
if reply[1] == "created" or reply[1] == "replaced" or reply[1] == "updated" then ojsLayoutRecord(layoutMissing) end
-- A created job as one string, "created:<nowMs>:<deduplication id or empty>:<jobId>" (the id last: a
-- caller's may hold anything): ioredis decodes an array reply element by element, which a plain
-- add's one-string reply does not pay (bullmq-enqueue.ts, uniqueAddOutcome).
if reply[1] == "created" then
  return "created:" .. string.format("%.0f", reply[3]) .. ":" .. (reply[4] or "") .. ":" .. reply[2]
end
return reply
