/**
 * ojs-unique/memory: the in-memory reference backend. Every spec rule, no I/O; the demo's
 * default and the yardstick the other backends' conformance runs compare against.
 */
export { createMemoryBackend } from './memory-backend.js';
export type { MemoryBackend, MemoryBackendOptions } from './memory-backend.js';
