/**
 * scripts/check-layers.mjs (run first by `npm test`): this repository passes, and a checkout that
 * breaks each rule fails with the file, the import and the rule.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

function check(root?: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['scripts/check-layers.mjs', ...(root ? [root] : [])], { encoding: 'utf8' });
}

describe('scripts/check-layers.mjs', function () {
  this.timeout(120_000); // a safety net: two runs at once on 2 CPUs take several times longer

  it('finds the layers of this repository intact', function () {
    const { status, stdout, stderr } = check();
    expect(stderr).to.equal('');
    expect(status).to.equal(0);
    expect(stdout).to.match(/the layers hold/);
  });

  describe('on a checkout that breaks the rules', function () {
    let root: string;
    let report: string;
    let status: number | null;

    before(function () {
      root = mkdtempSync(join(tmpdir(), 'ojs-check-layers-'));
      const files: Record<string, string> = {
        'package.json': JSON.stringify({ name: 'ojs-unique', dependencies: { zod: '*' } }),
        'src/index.ts':
          "export { createMemoryBackend } from '../adapters/memory/index.js';\nimport { z } from 'zod';\nimport 'node:crypto';\n",
        'src/pg-user.ts': "import type { Pool } from 'pg';\n",
        // A circle of type-only imports is still a circle; a one-way import is not.
        'src/job.ts': "import type { Policy } from './policy.js';\nexport type State = 'active';\n",
        'src/policy.ts': "import type { State } from './job.js';\nexport type Policy = { states: State[] };\n",
        'src/errors.ts': "import type { State } from './job.js';\n",
        'adapters/memory/index.ts':
          "import { DEFAULT_QUEUE } from '../../src/internal.js';\nexport * from './memory-backend.js';\nimport { countUniqueAdd } from '../../telemetry/unique-add-counter.js';\n",
        // telemetry/: src/ and the OpenTelemetry API only, never a host or an adapter.
        'telemetry/unique-add-counter.ts':
          "import { UNIQUE_ADDS_METRIC } from '../src/unique-add-telemetry.js';\nconst api = require('@opentelemetry/api');\nimport { Queue } from 'bullmq';\nimport { createMemoryBackend } from '../adapters/memory/index.js';\n",
        'adapters/bullmq/index.ts': "import { Queue } from 'bullmq';\nconst lazy = () => import('../graphile-worker/index.js');\n",
        'adapters/graphile-worker/index.ts': "type Backend = import('ojs-unique/memory').MemoryBackend;\nimport pg from 'pg';\n",
        'cli/main.ts':
          "import { createMemoryBackend } from '../adapters/memory/index.js';\nimport { parseUniquePolicy } from '../src/index.js';\nimport { createOjsServer } from '../server/index.js';\nimport Fastify from 'fastify';\n",
        'server/index.ts':
          "import { createMemoryBackend } from '../adapters/memory/index.js';\nimport { Queue } from 'bullmq';\nimport express from 'express';\nimport { main } from '../cli/main.js';\nconst fastify = await import('fastify');\n",
        'examples/demo.ts':
          "import { parseUniquePolicy } from '../src/index.js';\nimport { prepareUnique } from 'ojs-unique/internal';\nimport { createMemoryBackend } from 'ojs-unique/memory';\nimport { helper } from '../test/helper.js';\nimport scripts from 'bullmq/dist/cjs/scripts';\nimport { Queue } from 'bullmq';\nconst name = 'memory';\nawait import(`./demo/${name}.js`);\n",
        'examples/demo/memory.ts': "import type { DemoBackend } from './demo-backend.js';\n",
        'test/helper.ts':
          "import createDemo from '../examples/demo/memory.js';\nimport { run } from '../bench/key.js';\nconst fixture = require('../scripts/fixture.cjs');\nconst copy = await import(`../src/index.js?copy=${Date.now()}`);\n",
        'bench/key.ts': "import { helper } from '../test/helper.js';\nimport { internal } from '../examples/demo.js';\n",
        // An import inside a string or a comment is not an import.
        'scripts/build.mjs': "// import '../examples/demo.ts';\nconst text = \"import { x } from '../bench/key.js';\";\n",
      };
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(join(root, dirname(path)), { recursive: true });
        writeFileSync(join(root, path), text);
      }
      const result = check(root);
      report = result.stderr;
      status = result.status;
    });

    after(function () {
      rmSync(root, { recursive: true, force: true });
    });

    it('exits 1 and counts the imports that break a rule', function () {
      expect(status).to.equal(1);
      expect(report).to.match(/^check-layers: 19 imports break the layering rules:/);
    });

    it('no import circle in a shipped layer, type-only imports included', function () {
      expect(report).to.contain('src/job, src/policy: an import circle (type-only imports count)');
      expect(report).not.to.contain('src/errors,');
    });

    it('src/ imports neither an adapter nor a host', function () {
      expect(report).to.contain(
        "src/index.ts:1: imports '../adapters/memory/index.js': src/ is the spec layer: it never imports adapters/",
      );
      expect(report).to.contain("src/pg-user.ts:1: imports 'pg': src/ is the spec layer");
      expect(report).not.to.match(/src\/index\.ts:[23]:/);
    });

    it('adapters import src/, their own folder and their own host, never each other', function () {
      expect(report).to.contain("adapters/bullmq/index.ts:2: imports '../graphile-worker/index.js': adapters never import each other");
      expect(report).to.contain("adapters/graphile-worker/index.ts:1: imports 'ojs-unique/memory': adapters never import each other");
      expect(report).not.to.match(/adapters\/memory\/index\.ts/);
      expect(report).not.to.match(/adapters\/bullmq\/index\.ts:1:|adapters\/graphile-worker\/index\.ts:2:/);
    });

    it('telemetry/ imports src/ and @opentelemetry/api only; adapters may import it', function () {
      expect(report).to.contain(
        "telemetry/unique-add-counter.ts:3: imports 'bullmq': telemetry/ imports src/, node builtins, the dependencies",
      );
      expect(report).to.contain(
        "telemetry/unique-add-counter.ts:4: imports '../adapters/memory/index.js': telemetry/ imports src/ and its own folder only",
      );
      expect(report).not.to.match(/telemetry\/unique-add-counter\.ts:[12]:/);
    });

    it('cli/ imports src/ and server/ only', function () {
      expect(report).to.contain("cli/main.ts:1: imports '../adapters/memory/index.js': cli/ imports src/ and server/ only");
      expect(report).not.to.match(/cli\/main\.ts:[23]:/);
      // The gateway's web server is server/'s alone (an optional peer).
      expect(report).to.contain("cli/main.ts:4: imports 'fastify': cli/ imports src/, node builtins and the dependencies only");
    });

    it("server/ imports src/, the adapters, the dependencies, its own packages and the adapters' hosts only", function () {
      expect(report).to.contain(
        "server/index.ts:3: imports 'express': server/ imports the dependencies, its own packages (fastify, cron-parser)",
      );
      expect(report).to.contain("server/index.ts:4: imports '../cli/main.js': server/ imports src/, adapters/ and its own folder only");
      expect(report).not.to.match(/server\/index\.ts:[125]:/);
    });

    it("examples import the published names and the hosts, never sources, internal, tests or a host's deep path", function () {
      expect(report).to.contain("examples/demo.ts:1: imports '../src/index.js': examples import the published names");
      expect(report).to.contain(
        "examples/demo.ts:2: imports 'ojs-unique/internal': examples use the public API: never ojs-unique/internal",
      );
      expect(report).to.contain("examples/demo.ts:4: imports '../test/helper.js': only tests (and benchmarks) import test/");
      expect(report).to.contain("examples/demo.ts:5: imports 'bullmq/dist/cjs/scripts': examples import only");
      expect(report).to.contain('examples/demo.ts:8: import(`./demo/${name}.js`): a computed specifier cannot be checked');
      expect(report).not.to.match(/examples\/demo\.ts:[36]:|examples\/demo\/memory\.ts/);
    });

    it('nothing imports examples/, bench/ or scripts/; bench/ may import tests and examples', function () {
      expect(report).to.contain("test/helper.ts:1: imports '../examples/demo/memory.js': nothing imports examples/");
      expect(report).to.contain("test/helper.ts:2: imports '../bench/key.js': bench/ may import anything, but nothing imports bench/");
      expect(report).to.contain("test/helper.ts:3: imports '../scripts/fixture.cjs': nothing imports scripts/");
      expect(report).not.to.match(/bench\/key\.ts|test\/helper\.ts:4:|scripts\/build\.mjs/);
    });
  });
});
