/**
 * A salt for this test run, put in every Redis key prefix and PostgreSQL schema name the tests
 * create, so that two runs sharing one Redis or database (two checkouts, CI beside a developer)
 * never touch each other's data. Set `OJS_TEST_SALT` to reproduce a failed run's names.
 * The salt is put in `OJS_TEST_SALT` too, so that mocha's parallel workers, started from this
 * process's environment, share it.
 */
import { randomBytes } from 'node:crypto';

// Lower case: PostgreSQL folds unquoted names, and some of the tests' schema names are unquoted.
export const RUN_SALT = (process.env.OJS_TEST_SALT = (process.env.OJS_TEST_SALT ?? randomBytes(3).toString('hex')).toLowerCase());
if (!/^[a-z0-9_]{1,16}$/.test(RUN_SALT))
  throw new Error(`OJS_TEST_SALT must be 1 to 16 letters, digits or _ (got ${JSON.stringify(RUN_SALT)})`);
