#!/usr/bin/env node
// The BullMQ matrix's second run (`npm test` runs everything on the lockfile's BullMQ, the newest
// 6.x): the BullMQ adapter's suites on the oldest supported BullMQ, installed as the npm alias
// `bullmq-oldest` and loaded as `bullmq` by scripts/use-bullmq.mjs. The contract test checks that
// the run really loaded it (OJS_EXPECT_BULLMQ).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const version = createRequire(import.meta.url)('bullmq-oldest/package.json').version;
const env = {
  ...process.env,
  OJS_BULLMQ_PACKAGE: 'bullmq-oldest',
  OJS_EXPECT_BULLMQ: version,
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ./scripts/use-bullmq.mjs`.trim(),
};
console.log(`BullMQ adapter suites on bullmq ${version} (bullmq-oldest)`);
const mocha = join(root, 'node_modules/.bin/mocha');
const result = spawnSync(
  mocha,
  [
    'test/adapters/bullmq-*.test.ts',
    'test/faults/bullmq-*.test.ts',
    // The gateway's public conformance on BullMQ (levels 0-4 but the per-minute overlap file,
    // which waits two real minutes and exercises nothing version-specific the scheduled part does not).
    'test/gateway/gateway-conformance-bullmq-core.test.ts',
    'test/gateway/gateway-conformance-bullmq-scheduled.test.ts',
    'test/property/lifecycle-property.test.ts',
  ],
  { cwd: root, stdio: 'inherit', env },
);
process.exit(result.status ?? 1);
