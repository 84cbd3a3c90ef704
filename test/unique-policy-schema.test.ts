import { expect } from 'chai';
import { createRequire } from 'node:module';
import { isInvalidJobInputError, parseUniquePolicy, uniquePolicyJsonSchema } from '../src/index.js';

// ajv ships CommonJS; its 2020-12 build is the one the §13 schema declares.
const Ajv2020 = createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js').default;

/** Whether the validator (zod, inside `parseUniquePolicy`) accepts a document. */
function zodAccepts(doc: unknown): boolean {
  try {
    parseUniquePolicy(doc);
    return true;
  } catch (error) {
    if (isInvalidJobInputError(error)) return false;
    throw error;
  }
}

/**
 * The §13 JSON Schema and the zod validator judge one corpus. They must agree on every document
 * except the listed deviations, each one deliberate and documented in src/unique-policy.ts.
 */
describe('§13 JSON Schema and the zod validator do not drift', function () {
  const validate = new Ajv2020({ strict: false }).compile(uniquePolicyJsonSchema);

  const agree: unknown[] = [
    {},
    { keys: [] },
    { keys: ['type', 'queue', 'args', 'meta'], meta_keys: ['t'] },
    { keys: ['args'], args_keys: [] },
    { keys: ['args'], args_keys: ['a', 'b'] },
    { states: ['scheduled', 'available', 'pending', 'active', 'completed', 'retryable', 'cancelled', 'discarded'] },
    { on_conflict: 'reject' },
    { on_conflict: 'replace' },
    { on_conflict: 'replace_except_schedule' },
    { on_conflict: 'ignore' },
    { x_report_only: true },
    { keys: ['type', 'args'], x_report_only: false },
    ...['PT1H', 'P1D', 'P1W', 'P1Y2M3W4DT5H6M7.25S', 'PT0.5S', 'P30D', 'PT5M', 'P1M', 'P1Y'].map((period) => ({ period })),
    // Invalid for both:
    [],
    'x',
    null,
    { keys: ['argz'] },
    { keys: ['Type'] },
    { keys: ['type', 'type'] },
    { keys: 'type' },
    { keys: ['meta'] },
    { keys: ['meta'], meta_keys: [] },
    { meta_keys: [] },
    { args_keys: ['a', 'a'], keys: ['args'] },
    { args_keys: [1], keys: ['args'] },
    { states: ['done'] },
    { states: ['active', 'active'] },
    { on_conflict: 'skip' },
    { on_conflict: null },
    { x_report_only: 'yes' },
    { extra: true },
    ...['1h', 'P1H', 'PT1D', 'P1.5D', '-P1D', 'pt1h', 'P1DT1H1M1.S', ' PT1H'].map((period) => ({ period })),
  ];

  for (const doc of agree) {
    it(`agree on ${JSON.stringify(doc)}`, function () {
      expect(zodAccepts(doc)).to.equal(validate(doc));
    });
  }

  const deviations: [string, unknown, { jsonSchema: boolean; zod: boolean }][] = [
    ['§2.1 null is the documented default of args_keys', { args_keys: null }, { jsonSchema: false, zod: true }],
    ['§2.1 null is the documented default of meta_keys', { meta_keys: null }, { jsonSchema: false, zod: true }],
    ['§2.1 null is the documented default of period', { period: null }, { jsonSchema: false, zod: true }],
    ['A.3 integer seconds are a permitted extension', { period: 60 }, { jsonSchema: false, zod: true }],
    ['ISO 8601 needs at least one component', { period: 'P' }, { jsonSchema: true, zod: false }],
    ['ISO 8601 needs a time component after T', { period: 'PT' }, { jsonSchema: true, zod: false }],
    ['ISO 8601 needs a time component after T', { period: 'P1DT' }, { jsonSchema: true, zod: false }],
    ['a zero period silently disables deduplication (§2.2 rationale)', { period: 'PT0S' }, { jsonSchema: true, zod: false }],
    ['an empty states list would silently disable deduplication', { states: [] }, { jsonSchema: true, zod: false }],
    ['args_keys without "args" in keys would be silently ignored', { args_keys: ['a'] }, { jsonSchema: true, zod: false }],
    ['meta_keys without "meta" in keys would be silently ignored', { meta_keys: ['a'] }, { jsonSchema: true, zod: false }],
  ];
  it('§13 as printed requires meta_keys whenever keys is absent, which is why the exported schema adds "required": ["keys"] to its "if"', function () {
    const verbatim = structuredClone(uniquePolicyJsonSchema) as unknown as { if: { required?: string[] } };
    delete verbatim.if.required;
    const printed = new Ajv2020({ strict: false }).compile(verbatim);
    expect(printed({})).to.equal(false);
    expect(printed({ keys: ['type'] })).to.equal(true);
    expect(validate({})).to.equal(true);
  });

  for (const [why, doc, expected] of deviations) {
    it(`deliberately differ on ${JSON.stringify(doc)}: ${why}`, function () {
      expect({ jsonSchema: validate(doc), zod: zodAccepts(doc) }).to.deep.equal(expected);
    });
  }
});
