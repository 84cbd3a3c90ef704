/**
 * `ojs-unique migrate`: the schemas `ojs-unique serve --backend graphile-worker` (and every
 * Graphile Worker entry point) use, installed as a step of their own, here so that cli/ reaches
 * the adapter through server/ as for `serve`.
 */
export { runUniqueJobsMigrations } from '../adapters/graphile-worker/graphile-worker-migrate.js';
