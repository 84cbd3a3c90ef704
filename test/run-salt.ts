/**
 * A salt for this test run, put in every Redis key prefix and PostgreSQL schema name the tests
 * create, so that two runs sharing one Redis or database (two checkouts, CI beside a developer)
 * never touch each other's data. Set `OJS_TEST_SALT` to reproduce a failed run's names.
 * The salt is put in `OJS_TEST_SALT` too, so that mocha's parallel workers, started from this
 * process's environment, share it.
 */
import { randomBytes } from 'node:crypto';

export const RUN_SALT = (process.env.OJS_TEST_SALT ??= randomBytes(3).toString('hex'));
