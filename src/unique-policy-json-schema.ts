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
 *
 * The `x_` properties are this library's extensions (docs/decisions.md), not §13's: their
 * shapes are here so that a policy document using them validates; their cross-field rules (a
 * period for `x_period_anchor`, a terminal state for its `finished_at`, `keys` with `x_key`,
 * `x_update`'s states within `states`, an `x_update` of `scheduled_at` for `x_max_wait`, `active`
 * in `states` for `x_successor`) are
 * zod's alone, like §2.2's.
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
    x_period_anchor: {
      type: 'string',
      enum: ['created_at', 'scheduled_at', 'last_duplicate', 'finished_at'],
      default: 'created_at',
      description:
        "Extension: what the period is measured from: the existing job's created_at, its scheduled time, the last duplicate attempt, or when it finished.",
    },
    x_key: {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description: 'Extension (Appendix A.1): a caller-provided uniqueness key, hashed instead of the dimensions.',
    },
    x_update: {
      type: 'object',
      properties: Object.fromEntries(
        ['scheduled', 'available', 'pending', 'active', 'retryable'].map((state) => [
          state,
          {
            type: 'array',
            items: { type: 'string', enum: ['args', 'meta', 'priority', 'max_attempts', 'scheduled_at'] },
            uniqueItems: true,
            minItems: 1,
          },
        ]),
      ),
      additionalProperties: false,
      minProperties: 1,
      description: 'Extension: per state of the duplicate, the fields of the new job copied onto it in place.',
    },
    x_max_wait: {
      type: 'string',
      pattern: '^P(?:\\d+Y)?(?:\\d+M)?(?:\\d+W)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+(?:\\.\\d+)?S)?)?$',
      description: "Extension: an x_update of scheduled_at never moves the duplicate's due time past its created_at plus this duration.",
    },
    x_successor: {
      type: 'string',
      enum: ['latest'],
      description:
        'Extension: a duplicate of an active job leaves one pending successor carrying the latest duplicate, created as a job when the active one finishes.',
    },
    x_report_only: {
      type: 'boolean',
      description: 'Report-only rollout: the add is decided and counted, and the job is always inserted.',
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
