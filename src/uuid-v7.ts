import { randomFillSync } from 'node:crypto';

/** Random bytes for this many ids are drawn at once: one CSPRNG call per batch, not per id. */
const IDS_PER_DRAW = 256;
const pool = Buffer.allocUnsafe(16 * IDS_PER_DRAW);
let offset = pool.length;

/**
 * A UUIDv7 (RFC 9562 §5.7), the id format ojs-core §5.1 requires: 48 bits of Unix ms, then
 * random bits. `nowMs` lets a backend stamp ids from its own clock.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, (offset += 16));
  let ms = Math.max(0, Math.floor(nowMs));
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
