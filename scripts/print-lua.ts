/**
 * `npm run print:lua`: writes the BullMQ adapter's scripts as Redis runs them, composed with the
 * installed BullMQ's add scripts, to adapters/bullmq/generated/composed/ (not committed: the
 * composition depends on the installed BullMQ), and the function library they make on Redis 7
 * and later (library.lua). A Lua error's line number (`user_script:<line>`) is a line of these
 * files; in a function (`user_function:<line>`), a line of library.lua.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installedBullMQ } from '../adapters/bullmq/bullmq-host.js';
import { composedScripts, printedName } from '../adapters/bullmq/bullmq-script-set.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'adapters/bullmq/generated/composed');
mkdirSync(out, { recursive: true });
const bullmq = installedBullMQ();
for (const script of composedScripts()) {
  const file = join(out, printedName(script));
  writeFileSync(file, script.lua);
  console.log(`${relative(root, file)}: ${script.lua.split('\n').length} lines, sha1 ${script.sha}`);
}
const library = composedScripts()[0]?.library;
if (library) {
  // As FUNCTION LOAD gets it (Redis >= 7): a `user_function:<line>` is a line of this file.
  const file = join(out, 'library.lua');
  writeFileSync(file, library.code);
  console.log(`${relative(root, file)}: ${library.code.split('\n').length} lines, the function library ${library.name}`);
}
console.log(`composed with bullmq ${bullmq.version} (${relative(root, bullmq.root)})`);
