/**
 * The normative JSON Schema of spec §13, with one correction: its `if` lacked
 * `"required": ["keys"]`. Without it the `if` holds vacuously when `keys` is absent (JSON Schema's
 * `properties` only constrains present properties), so the verbatim schema demands `meta_keys` on
 * every policy that omits `keys`, `{}` included: a contradiction of §2.1, where every field is
 * optional and `keys` defaults to `["type"]`. test/unique-policy-schema.test.ts shows the verbatim
 * schema's behaviour next to this one. `uniquePolicySchema` (zod) is the validator;
 * test/unique-policy-schema.test.ts runs both over one corpus so the two cannot drift, and lists
 * the few places where zod is deliberately stricter or follows the spec's prose (see
 * src/unique-policy.ts).
 */
export const uniquePolicyJsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://openjobspec.org/schemas/v1/unique-policy.json',
  title: 'OJS UniquePolicy',
  description: 'Defines the deduplication policy for a job at enqueue time.',
  type: 'object',
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'string',
        enum: ['type', 'queue', 'args', 'meta'],
      },
      uniqueItems: true,
      default: ['type'],
      description: 'Dimensions that define the uniqueness fingerprint.',
    },
    args_keys: {
      type: 'array',
      items: {
        type: 'string',
      },
      uniqueItems: true,
      description: 'Top-level keys within args to include in the fingerprint. If omitted, all of args is included.',
    },
    meta_keys: {
      type: 'array',
      items: {
        type: 'string',
      },
      uniqueItems: true,
      minItems: 1,
      description: "Top-level keys within meta to include in the fingerprint. Required when 'meta' is in keys.",
    },
    period: {
      type: 'string',
      pattern: '^P(?:\\d+Y)?(?:\\d+M)?(?:\\d+W)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+(?:\\.\\d+)?S)?)?$',
      description: 'ISO 8601 duration for the uniqueness window.',
    },
    states: {
      type: 'array',
      items: {
        type: 'string',
        enum: ['scheduled', 'available', 'pending', 'active', 'completed', 'retryable', 'cancelled', 'discarded'],
      },
      uniqueItems: true,
      default: ['available', 'active', 'scheduled', 'retryable', 'pending'],
      description: 'Job states to check against when detecting duplicates.',
    },
    on_conflict: {
      type: 'string',
      enum: ['reject', 'replace', 'replace_except_schedule', 'ignore'],
      default: 'reject',
      description: 'Strategy for handling a detected duplicate.',
    },
  },
  additionalProperties: false,
  if: {
    required: ['keys'],
    properties: {
      keys: {
        contains: {
          const: 'meta',
        },
      },
    },
  },
  then: {
    required: ['meta_keys'],
  },
} as const;
