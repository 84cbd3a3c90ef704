#!/usr/bin/env node
import { main } from './cli-main.js';

const argv = process.argv.slice(2);
if (argv[0] === 'serve') {
  // Loaded only for `serve`: `key` and `validate` do not start Fastify.
  const { serve } = await import('./cli-serve.js');
  process.exitCode = await serve(argv.slice(1));
} else if (argv[0] === 'migrate') {
  // Loaded only for `migrate`: it needs graphile-worker and pg.
  const { migrate } = await import('./cli-migrate.js');
  process.exitCode = await migrate(argv.slice(1));
} else if (argv[0] === 'explain') {
  // Loaded only for `explain`: it needs the backend's client (ioredis or pg).
  const { explain } = await import('./cli-explain.js');
  process.exitCode = await explain(argv.slice(1));
} else if (argv[0] === 'doctor') {
  const { doctor } = await import('./cli-doctor.js');
  process.exitCode = await doctor(argv.slice(1));
} else {
  process.exitCode = main(argv);
}
