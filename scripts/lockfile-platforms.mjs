#!/usr/bin/env node
/**
 * Restores the lockfile entries of optional platform packages that the package registry reachable
 * from our machines does not serve (for example msgpackr-extract's darwin/win32 builds).
 *
 * `npm install` here leaves them out of package-lock.json because it cannot fetch their
 * metadata, and `npm ci` then refuses the lockfile ("Missing: … from lock file"). npm would write
 * these entries on a machine with the full registry; this writes the same entries (version, os,
 * cpu, optional) so `npm ci` accepts the lockfile on every platform, and skips them as npm does.
 *
 *   node scripts/lockfile-platforms.mjs          # fix package-lock.json in place
 *   node scripts/lockfile-platforms.mjs --check  # exit 1 if an entry is missing
 */
import { readFileSync, writeFileSync } from 'node:fs';

const PLATFORM =
  /-(darwin|linux|win32|freebsd|android|openbsd|sunos|aix|netbsd)-(x64|arm64|arm|ia32|ppc64|s390x|riscv64|loong64|mips64el)(?:-(?:gnu|musl|msvc))?$/;
const check = process.argv.includes('--check');
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const missing = [];

for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const match = PLATFORM.exec(name);
    if (!match) continue;
    const key = `node_modules/${name}`;
    if (lock.packages[key] || lock.packages[`${path}/node_modules/${name}`]) continue;
    missing.push(name);
    lock.packages[key] = { version, cpu: [match[2]], ...(entry.dev ? { dev: true } : {}), optional: true, os: [match[1]] };
  }
}

if (check) {
  if (missing.length > 0) {
    console.error(`package-lock.json lacks ${missing.join(', ')}: run node scripts/lockfile-platforms.mjs`);
    process.exit(1);
  }
} else if (missing.length > 0) {
  const [root, ...rest] = Object.entries(lock.packages);
  lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => (a < b ? -1 : 1))]);
  writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`added ${missing.join(', ')}`);
}
