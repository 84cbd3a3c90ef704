#!/usr/bin/env node
// Compiles adapters/graphile-worker/sql/*.sql into adapters/graphile-worker/generated/sql.ts (and
// the gateway's server/sql/*.sql into server/generated/graphile-worker-gateway-sql.ts), so
// the adapter never reads files at run time (no dirname tricks between ESM, CJS and dist/).
// The adapter's functions, one per file in sql/functions/, become one text, `install-functions`,
// which the installer runs in one transaction: the files in name order. A `language sql`
// function is checked when it is created, so one that calls another must sort after it (the
// install fails otherwise); plpgsql bodies resolve what they call when they run.
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
const gatewaySqlDir = join(root, 'server/sql');
const gatewayOutFile = join(root, 'server/generated/graphile-worker-gateway-sql.ts');

const sqlIn = (dir) =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => {
      const text = readFileSync(join(dir, name), 'utf8');
      if (!text.startsWith('-- ')) throw new Error(`${name}: every SQL file opens with its contract comment`);
      return { name: name.replace(/\.sql$/, ''), text };
    });

const files = sqlIn(sqlDir);
const functions = sqlIn(join(sqlDir, 'functions'));
const installFunctions =
  '-- install-functions: every function of the adapter, built by scripts/build-sql.mjs from sql/functions/*.sql\n' +
  '-- (one function per file, each opening with its contract), in file name order.\n' +
  functions.map(({ name, text }) => `\n-- functions/${name}.sql\n${text}`).join('');
const entries = [...files, { name: 'install-functions', text: installFunctions }]
  .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  .map(({ name, text }) => `  ${JSON.stringify(name)}: ${JSON.stringify(text)},`);

const adapterModule = `// generated, do not edit: run \`node scripts/build-sql.mjs\` after changing adapters/graphile-worker/sql/**/*.sql
/* eslint-disable */
export const sqlFiles = {
${entries.join('\n')}
} as const;

export type SqlFileName = keyof typeof sqlFiles;
`;

// The OJS gateway's statements and migrations on Graphile Worker (server/sql/*.sql): the
// gateway's own, rendered with the same schema placeholders.
const gatewayFiles = sqlIn(gatewaySqlDir);
const gatewayModule = `// generated, do not edit: run \`node scripts/build-sql.mjs\` after changing server/sql/*.sql
/* eslint-disable */
export const gatewaySqlFiles = {
${gatewayFiles.map(({ name, text }) => `  ${JSON.stringify(name)}: ${JSON.stringify(text)},`).join('\n')}
} as const;

export type GatewaySqlFileName = keyof typeof gatewaySqlFiles;
`;

const outputs = [
  [outFile, adapterModule, `${files.length} statement files, ${functions.length} function files`],
  [gatewayOutFile, gatewayModule, `${gatewayFiles.length} gateway files`],
];
if (process.argv.includes('--check')) {
  const stale = outputs.filter(([file, text]) => (existsSync(file) ? readFileSync(file, 'utf8') : '') !== text);
  for (const [file] of stale) console.error(`${file.slice(root.length + 1)} is out of date: run \`node scripts/build-sql.mjs\``);
  if (stale.length > 0) process.exit(1);
  for (const [file, , what] of outputs) console.log(`${file.slice(root.length + 1)} is up to date (${what})`);
} else {
  for (const [file, text, what] of outputs) {
    writeFileSync(file, text);
    console.log(`wrote ${file.slice(root.length + 1)} (${what})`);
  }
}
