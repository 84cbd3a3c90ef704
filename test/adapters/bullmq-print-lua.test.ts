/**
 * `npm run print:lua` writes the scripts exactly as Redis runs them, so the line a Lua error names
 * (`user_script:<line>`) is that line of the printed file; the error the adapter raises says where
 * to look.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { backendErrorFor } from '../../adapters/bullmq/bullmq-errors.js';
import { composedScripts, COMMANDS, printedName } from '../../adapters/bullmq/bullmq-script-set.js';
import { setScriptMode } from '../../adapters/bullmq/bullmq-script-command.js';
import { layoutArgs } from '../../adapters/bullmq/bullmq-sidecar-keys.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('bullmq adapter: npm run print:lua', function () {
  this.timeout(30_000);
  const ctx = useRedisPrefix(import.meta.url);

  it('writes every composed script, byte for byte as sent to Redis', function () {
    execFileSync(process.execPath, ['--import', 'tsx', 'scripts/print-lua.ts'], { cwd: root, stdio: 'pipe' });
    for (const script of composedScripts()) {
      expect(readFileSync(`${root}/adapters/bullmq/generated/composed/${printedName(script)}`, 'utf8'), printedName(script)).to.equal(
        script.lua,
      );
    }
    expect(readFileSync(`${root}/adapters/bullmq/generated/composed/library.lua`, 'utf8')).to.equal(composedScripts()[0]!.library!.code);
  });

  it("a Lua error names a line of the printed script, and the adapter's error points at print:lua", async function () {
    const uniqueAdd = composedScripts().find((script) => script.command === COMMANDS.uniqueAdd)!;
    const keys = Array.from({ length: uniqueAdd.numberOfKeys }, (_, i) => `${ctx.prefix}:k${i}`);
    // ARGV[1] is not BullMQ's msgpacked args: the script fails where it reads them.
    const argv = [
      ...['not msgpack', '{}', 'x', `${ctx.prefix}:`, 'q', 'key', 'reject', 'waiting', '', '', '', '{}', '{}', 0, '', ''],
      ...layoutArgs([`${ctx.prefix}:q:ojs:layout`]),
    ];
    const failure = async (mode: 'scripts' | 'functions') => {
      const client = ctx.connect();
      setScriptMode(client, mode);
      return (await uniqueAdd.run(client, [...keys, ...argv]).then(
        () => expect.fail('expected a Lua error'),
        (error: Error) => error,
      )) as Error;
    };
    const error = await failure('scripts');
    const line = Number(/user_script:(\d+)/.exec(error.message)?.[1]);
    expect(uniqueAdd.lua.split('\n')[line - 1]).to.contain('args[BULLMQ_ARG_KEY_PREFIX]');
    expect(backendErrorFor(error).message).to.contain('npm run print:lua');
    // As a function (Redis >= 7): a line of the library.
    const inFunction = await failure('functions');
    const libraryLine = Number(/user_function:(\d+)/.exec(inFunction.message)?.[1]);
    expect(uniqueAdd.library!.code.split('\n')[libraryLine - 1]).to.contain('args[BULLMQ_ARG_KEY_PREFIX]');
    expect(backendErrorFor(inFunction).message).to.contain('library.lua');
  });
});
