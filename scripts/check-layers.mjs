#!/usr/bin/env node
/**
 * Checks that the repository's layers hold, by reading every import of every source file:
 *
 *   src/             the spec layer: imports src/ only (plus node builtins and the package's
 *                    dependencies), never an adapter or a host
 *   telemetry/       the OpenTelemetry binding every adapter shares: imports src/, its own folder
 *                    and the optional peer @opentelemetry/api (loaded on first use), no host
 *   adapters/<name>/ imports src/, telemetry/, its own folder and its own host, never another adapter
 *   server/          the OJS HTTP gateway: imports src/, any adapter, its own folder, the
 *                    dependencies, its own optional peers (fastify, cron-parser) and the hosts the adapters drive
 *   cli/             imports src/ and server/ only
 *   examples/        import the published names (`ojs-unique`, `ojs-unique/bullmq`, …, never
 *                    `ojs-unique/internal`), the hosts, node builtins and other examples
 *   test/            imports anything but examples/, bench/ and scripts/ (run an example as a
 *                    child process instead)
 *   bench/           imports anything but scripts/; nothing imports bench/
 *   scripts/         imports anything but bench/; nothing imports scripts/
 *
 * No import circle in a layer the package ships (src/, each adapter, server/, cli/), type-only
 * imports included: a circle means no file of it can be read, or changed, alone.
 *
 * Imports are read from the syntax tree (static and type-only imports, `export … from`, dynamic
 * `import()`, `import x = require()`, `require()` and `import('…')` types), so an import inside a
 * string or a comment does not count. A dynamic import whose specifier is computed cannot be
 * checked and is refused in src/, adapters/, cli/ and examples/.
 *
 *   node scripts/check-layers.mjs          # exit 1, naming file, import and rule, on any violation
 *   node scripts/check-layers.mjs <dir>    # the same for another checkout (the check's own test)
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, extname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = process.argv[2] ? resolve(process.argv[2]) : join(dirname(fileURLToPath(import.meta.url)), '..');
const DIRS = ['src', 'telemetry', 'adapters', 'server', 'cli', 'examples', 'test', 'bench', 'scripts'];
const EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const DEPENDENCIES = Object.keys(pkg.dependencies ?? {});

/** The published entry points and the source folder each one is built from. */
const ENTRY_POINTS = {
  'ojs-unique': 'src',
  'ojs-unique/internal': 'src',
  'ojs-unique/translate': 'src',
  'ojs-unique/memory': 'adapters/memory',
  'ojs-unique/bullmq': 'adapters/bullmq',
  'ojs-unique/graphile-worker': 'adapters/graphile-worker',
  'ojs-unique/server': 'server',
};
/** The packages each adapter drives; an adapter imports no other host. */
const ADAPTER_HOSTS = {
  'adapters/memory': [],
  'adapters/bullmq': ['bullmq', 'ioredis'],
  'adapters/graphile-worker': ['graphile-worker', 'pg'],
};
/** The optional peers telemetry/ loads (never a host: nothing of it is needed for an add to work). */
const TELEMETRY_PEERS = ['@opentelemetry/api'];
/** The gateway's own packages: optional peers that only server/ imports (a library user installs none). */
const SERVER_PACKAGES = ['fastify', 'cron-parser'];
const EXAMPLE_HOSTS = ['bullmq', 'graphile-worker', 'ioredis', 'pg'];
const EXAMPLE_NAMES = Object.keys(ENTRY_POINTS).filter((name) => name !== 'ojs-unique/internal');

function sourceFiles(dir) {
  const files = [];
  if (!existsSync(join(ROOT, dir))) return files;
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') files.push(...sourceFiles(path));
    } else if (EXTENSIONS.has(extname(entry.name))) {
      files.push(path);
    }
  }
  return files;
}

/** The layer of a repository path: `src`, `adapters/<name>`, `cli`, … or `root` for anything else. */
function layerOf(path) {
  const [top, second] = path.split('/');
  if (top === 'adapters' && second) return `adapters/${second}`;
  return DIRS.includes(top) ? top : 'root';
}

/** `{ spec, line, computed }` for every module the file refers to. */
function importsOf(path) {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const kind = /\.[mc]?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const found = [];
  const add = (node, specifierNode) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    if (specifierNode && (ts.isStringLiteral(specifierNode) || ts.isNoSubstitutionTemplateLiteral(specifierNode))) {
      found.push({ spec: specifierNode.text, line, computed: false });
    } else {
      found.push({ spec: specifierNode ? specifierNode.getText(source) : '(none)', line, computed: true });
    }
  };
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      add(node, node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(callee) && callee.text === 'require' && node.arguments.length === 1)
      ) {
        add(node, node.arguments[0]);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The package name of a bare specifier (`@scope/name` or `name`), without a subpath. */
function packageName(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const isBuiltin = (spec) => spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0]);

/**
 * What an import refers to: `{ layer, path }` for a file of this repository (a relative path or
 * a published name), `{ package }` for another package, `{ builtin }` for a node builtin.
 */
function targetOf(from, spec) {
  if (spec.startsWith('/') || (/^[a-z]+:/i.test(spec) && !spec.startsWith('node:'))) return { layer: 'outside', path: spec };
  if (spec.startsWith('.')) {
    const path = posix.normalize(posix.join(posix.dirname(from), spec));
    return { layer: path.startsWith('..') ? 'outside' : layerOf(path), path };
  }
  if (isBuiltin(spec)) return { builtin: spec };
  if (packageName(spec) === pkg.name) {
    const layer = ENTRY_POINTS[spec];
    return layer ? { layer, path: spec, entryPoint: spec } : { layer: 'unknown-entry-point', path: spec, entryPoint: spec };
  }
  return { package: packageName(spec), subpath: spec !== packageName(spec) };
}

/** Null when `from` may import `target`, else the rule it breaks. */
function violation(from, target) {
  const layer = layerOf(from);
  if (target.builtin) return null;
  if (target.layer === 'unknown-entry-point')
    return `${pkg.name} exports no such entry point (it has ${Object.keys(ENTRY_POINTS).join(', ')})`;
  if (target.layer === 'outside') return 'imports name a package or a file of this repository, by a relative path';

  // Places nothing else depends on (bench/ may import anything but scripts/).
  if (target.layer !== layer) {
    if (target.layer === 'bench') return 'bench/ may import anything, but nothing imports bench/';
    if (target.layer === 'scripts') return 'nothing imports scripts/';
    if (layer === 'bench') return null;
    if (target.layer === 'examples') return 'nothing imports examples/ (a test runs an example as a child process instead)';
    if (target.layer === 'test') return 'only tests (and benchmarks) import test/';
  }

  if (layer === 'src') {
    if (target.package && !DEPENDENCIES.includes(target.package))
      return `src/ is the spec layer: it imports src/, node builtins and the dependencies (${DEPENDENCIES.join(', ')}) only, no host`;
    if (target.layer && target.layer !== 'src') return 'src/ is the spec layer: it never imports adapters/ (nor cli/, test/ …)';
    return null;
  }
  if (layer === 'telemetry') {
    if (target.package && !DEPENDENCIES.includes(target.package) && !TELEMETRY_PEERS.includes(target.package))
      return `telemetry/ imports src/, node builtins, the dependencies and ${TELEMETRY_PEERS.join(', ')} only, no host`;
    if (target.layer && target.layer !== 'src' && target.layer !== 'telemetry') return 'telemetry/ imports src/ and its own folder only';
    return null;
  }
  if (layer.startsWith('adapters/')) {
    const hosts = ADAPTER_HOSTS[layer];
    if (!hosts) return `${layer} is an adapter this check does not know: add its hosts to ADAPTER_HOSTS in scripts/check-layers.mjs`;
    if (target.package && !DEPENDENCIES.includes(target.package) && !hosts.includes(target.package)) {
      return `${layer} imports its own host${hosts.length ? ` (${hosts.join(', ')})` : ' (none)'} and the dependencies only`;
    }
    if (target.layer?.startsWith('adapters/') && target.layer !== layer)
      return 'adapters never import each other (share code through src/)';
    if (target.layer && target.layer !== 'src' && target.layer !== 'telemetry' && target.layer !== layer)
      return `${layer} imports src/, telemetry/ and its own folder only`;
    return null;
  }
  if (layer === 'server') {
    const hosts = Object.values(ADAPTER_HOSTS).flat();
    const allowed = [...DEPENDENCIES, ...SERVER_PACKAGES, ...hosts];
    if (target.package && !allowed.includes(target.package)) {
      return `server/ imports the dependencies, its own packages (${SERVER_PACKAGES.join(', ')}) and the adapters' hosts (${hosts.join(', ')}) only`;
    }
    if (target.layer && target.layer !== 'src' && target.layer !== 'server' && !target.layer.startsWith('adapters/')) {
      return 'server/ imports src/, adapters/ and its own folder only';
    }
    return null;
  }
  if (layer === 'cli') {
    if (target.package && !DEPENDENCIES.includes(target.package)) return 'cli/ imports src/, node builtins and the dependencies only';
    if (target.layer && target.layer !== 'src' && target.layer !== 'cli' && target.layer !== 'server')
      return 'cli/ imports src/ and server/ only';
    return null;
  }
  if (layer === 'examples') {
    if (target.entryPoint === 'ojs-unique/internal') return 'examples use the public API: never ojs-unique/internal (not semver)';
    if (target.entryPoint) return null;
    if (target.package) {
      // A host's deep path (`bullmq/dist/…`) is not a name an example may rely on.
      return EXAMPLE_HOSTS.includes(target.package) && !target.subpath
        ? null
        : `examples import only ${EXAMPLE_NAMES.join(', ')}, the hosts (${EXAMPLE_HOSTS.join(', ')}) and node builtins`;
    }
    if (target.layer !== 'examples') return `examples import the published names (${EXAMPLE_NAMES.join(', ')}), never the sources`;
    return null;
  }
  if (layer === 'test') {
    if (target.layer === 'root') return 'test/ imports files of src/, adapters/, server/, cli/ and test/ only';
    return null;
  }
  return null; // scripts/: anything
}

const problems = [];
let checked = 0;
/** Each shipped file's imports of files of its own layer (for the circles), by repository path without extension. */
const sameLayer = new Map();
const shipped = (layer) => ['src', 'server', 'cli'].includes(layer) || layer.startsWith('adapters/');
const withoutExtension = (path) => path.replace(/\.[mc]?[jt]s$/, '');
for (const dir of DIRS) {
  for (const file of sourceFiles(dir)) {
    checked++;
    const layer = layerOf(file);
    const edges = [];
    for (const { spec, line, computed } of importsOf(file)) {
      if (computed) {
        if (['src', 'telemetry', 'cli', 'examples'].includes(layer) || layer.startsWith('adapters/')) {
          problems.push(`${file}:${line}: import(${spec}): a computed specifier cannot be checked; use a string literal`);
        }
        continue;
      }
      const target = targetOf(file, spec);
      const rule = violation(file, target);
      if (rule) problems.push(`${file}:${line}: imports '${spec}': ${rule}`);
      else if (target.path && target.layer === layer && !target.entryPoint) edges.push(withoutExtension(target.path));
    }
    if (shipped(layer)) sameLayer.set(withoutExtension(file), edges);
  }
}
problems.push(...importCircles(sameLayer));

/** One problem per import circle among `graph`'s files (Tarjan's strongly connected components). */
function importCircles(graph) {
  const found = [];
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  let next = 0;
  const visit = (file) => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const to of graph.get(file) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file), low.get(to)));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file), index.get(to)));
    }
    if (low.get(file) !== index.get(file)) return;
    const circle = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      circle.push(member);
    } while (member !== file);
    const selfImport = (graph.get(file) ?? []).includes(file);
    if (circle.length > 1 || selfImport) {
      circle.sort();
      found.push(`${circle.join(', ')}: an import circle (type-only imports count); give what they share a file of its own`);
    }
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return found;
}

if (problems.length > 0) {
  console.error(`check-layers: ${problems.length} import${problems.length === 1 ? '' : 's'} break the layering rules:`);
  for (const problem of problems) console.error(`  ${problem}`);
  process.exitCode = 1;
} else {
  console.log(`check-layers: ${checked} files, the layers hold`);
}
