// Writes a CommonJS-flavoured copy (`.d.cts`) of every declaration file in dist/, which the
// exports map's `require` condition names.
//
// The package is ESM only: `require('ojs-unique')` loads that same ESM build (Node >= 20.19
// requires an ES module without top-level await), so there is one copy of the library and no
// dual-package hazard. TypeScript under `module: node16`, though, refuses a `require` of a file it
// sees as ESM (TS1479); these copies let CommonJS projects on node16 compile. They declare named
// exports only (the library has no default export), which is exactly the namespace object that
// `require()` returns, so the CommonJS view they give is true at run time.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = process.argv[2] ?? 'dist';
// Relative specifiers only; `from 'bullmq'` and friends resolve through the host's own exports.
const relative = /((?:from|import\()\s*['"])(\.{1,2}\/[^'"]+)\.js(['"])/g;

let written = 0;
for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const path = join(entry.parentPath, entry.name);
  const text = readFileSync(path, 'utf8').replace(relative, '$1$2.cjs$3');
  writeFileSync(path.slice(0, -'.d.ts'.length) + '.d.cts', text);
  written += 1;
}
if (written === 0) {
  console.error(`cjs-types: no .d.ts under ${root} (run tsc first)`);
  process.exit(1);
}
