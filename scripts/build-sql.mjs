#!/usr/bin/env node
// Compiles adapters/graphile-worker/sql/*.sql into adapters/graphile-worker/generated/sql.ts, so
// the adapter never reads files at run time (no dirname tricks between ESM, CJS and dist/).
//
//   node scripts/build-sql.mjs          write the module
//   node scripts/build-sql.mjs --check  exit 1 if the module is missing or out of date
//
// The files stay the source of truth: reviewable as SQL, runnable with psql after substituting
// the schema placeholders.
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sqlDir = join(root, 'adapters/graphile-worker/sql');
const outFile = join(root, 'adapters/graphile-worker/generated/sql.ts');

const files = readdirSync(sqlDir)
  .filter((name) => name.endsWith('.sql'))
  .sort();
const entries = files.map((name) => {
  const text = readFileSync(join(sqlDir, name), 'utf8');
  if (!text.startsWith('-- ')) throw new Error(`${name}: every SQL file opens with its contract comment`);
  return `  ${JSON.stringify(name.replace(/\.sql$/, ''))}: ${JSON.stringify(text)},`;
});

const output = `// generated, do not edit: run \`node scripts/build-sql.mjs\` after changing adapters/graphile-worker/sql/*.sql
/* eslint-disable */
export const sqlFiles = {
${entries.join('\n')}
} as const;

export type SqlFileName = keyof typeof sqlFiles;
`;

if (process.argv.includes('--check')) {
  const current = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
  if (current !== output) {
    console.error('adapters/graphile-worker/generated/sql.ts is out of date: run `node scripts/build-sql.mjs`');
    process.exit(1);
  }
  console.log(`generated/sql.ts is up to date (${files.length} files)`);
} else {
  writeFileSync(outFile, output);
  console.log(`wrote ${outFile} (${files.length} files)`);
}
