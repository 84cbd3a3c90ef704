// Module resolution hooks for scripts/use-bullmq.mjs: `bullmq` and `bullmq/…` become the
// package named by `target`.
let target = 'bullmq';

export function initialize(data) {
  target = data.target;
}

export async function resolve(specifier, context, next) {
  if (specifier === 'bullmq' || specifier.startsWith('bullmq/')) return next(target + specifier.slice('bullmq'.length), context);
  return next(specifier, context);
}
