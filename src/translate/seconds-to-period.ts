/**
 * A number of seconds (Oban's, Faktory's float seconds, BullMQ's milliseconds / 1000) as the ISO
 * 8601 period of spec §7, to the millisecond every backend keeps: `PT600S`, `PT0.5S`.
 */
export function secondsToPeriod(seconds: number): string | null {
  if (!Number.isFinite(seconds) || seconds <= 0) return null;
  const ms = Math.round(seconds * 1000);
  if (ms <= 0 || !Number.isSafeInteger(ms)) return null;
  const whole = Math.floor(ms / 1000);
  const fraction = ms % 1000;
  return fraction === 0 ? `PT${whole}S` : `PT${whole}.${String(fraction).padStart(3, '0').replace(/0+$/, '')}S`;
}
