/**
 * The gateway's retry policy (server/retry-policy.ts) and its reading from `options.retry`
 * (server/retry-options.ts): a delay per backoff type, the cap, jitter's bounds under a pinned
 * random source, non-retryable names and prefixes, and every refusal naming its field. Pure: no
 * clock, no backend.
 */
import { expect } from 'chai';
import type { ValidationIssue } from '../../src/errors.js';
import { readRetryOptions } from '../../server/retry-options.js';
import { DEFAULT_RETRY_POLICY, isNonRetryable, retryDelayMs, type RetryPolicy } from '../../server/retry-policy.js';
import { seededRandom } from '../seeded-random.js';

const policy = (fields: Partial<RetryPolicy>): RetryPolicy => ({ ...DEFAULT_RETRY_POLICY, jitter: false, ...fields });
const delays = (of: RetryPolicy, attempts: number) => Array.from({ length: attempts }, (_, index) => retryDelayMs(of, index + 1));

describe('gateway retry policy: delays', () => {
  it('none: every retry at once', () => {
    expect(delays(policy({ backoff: 'none', initialIntervalMs: 5000 }), 4)).to.deep.equal([0, 0, 0, 0]);
  });

  it('constant: the initial interval each time, whatever the coefficient', () => {
    expect(delays(policy({ backoff: 'constant', initialIntervalMs: 1500, backoffCoefficient: 3 }), 4)).to.deep.equal([
      1500, 1500, 1500, 1500,
    ]);
  });

  it('linear: the initial interval times the attempt that failed', () => {
    expect(delays(policy({ backoff: 'linear', initialIntervalMs: 1000 }), 4)).to.deep.equal([1000, 2000, 3000, 4000]);
  });

  it('exponential: the initial interval times the coefficient to the power attempt − 1', () => {
    expect(delays(policy({ backoff: 'exponential', initialIntervalMs: 1000, backoffCoefficient: 2 }), 4)).to.deep.equal([
      1000, 2000, 4000, 8000,
    ]);
    expect(delays(policy({ backoff: 'exponential', initialIntervalMs: 100, backoffCoefficient: 1.5 }), 3)).to.deep.equal([100, 150, 225]);
  });

  it('caps every delay at max_interval, for exponential and linear growth and huge attempts alike', () => {
    const capped = policy({ initialIntervalMs: 1000, backoffCoefficient: 10, maxIntervalMs: 2000 });
    expect(delays(capped, 3)).to.deep.equal([1000, 2000, 2000]);
    expect(retryDelayMs(capped, 10_000)).to.equal(2000);
    expect(delays(policy({ backoff: 'linear', initialIntervalMs: 1000, maxIntervalMs: 2500 }), 4)).to.deep.equal([1000, 2000, 2500, 2500]);
  });

  it('jitter scales the delay by a factor in [0.5, 1.5): the bounds at the random source’s ends', () => {
    const jittered = policy({ backoff: 'constant', initialIntervalMs: 2000, jitter: true });
    expect(retryDelayMs(jittered, 1, () => 0)).to.equal(1000);
    expect(retryDelayMs(jittered, 1, () => 0.5)).to.equal(2000);
    expect(retryDelayMs(jittered, 1, () => 0.999_999)).to.equal(3000);
    expect(retryDelayMs(jittered, 1, () => 0.25)).to.equal(1500);
  });

  it('jittered delays stay within [0.5, 1.5] × the delay over many draws, and never above the cap', () => {
    const draw = seededRandom(22);
    const random = () => draw(1_000_000) / 1_000_000;
    const exponential = policy({ initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 5000, jitter: true });
    for (let round = 0; round < 500; round++) {
      const attempt = 1 + (round % 5);
      const base = Math.min(1000 * 2 ** (attempt - 1), 5000);
      const delay = retryDelayMs(exponential, attempt, random);
      expect(delay, `attempt ${attempt}`).to.be.within(base * 0.5, Math.min(base * 1.5, 5000));
    }
  });

  it('jitter is drawn from the source given: two sources, two delays', () => {
    const jittered = policy({ initialIntervalMs: 1000, jitter: true });
    expect(retryDelayMs(jittered, 1, () => 0.1)).to.not.equal(retryDelayMs(jittered, 1, () => 0.9));
  });
});

describe('gateway retry policy: non-retryable errors', () => {
  const of = (names: string[]) => policy({ nonRetryableErrors: names });

  it('an exact name matches the error type, code or details.error_class, nothing longer', () => {
    expect(isNonRetryable(of(['FatalError']), { type: 'FatalError' })).to.equal(true);
    expect(isNonRetryable(of(['validation_error']), { type: 'ValueError', code: 'validation_error' })).to.equal(true);
    expect(isNonRetryable(of(['FatalError']), { type: 'handler_error', details: { error_class: 'FatalError' } })).to.equal(true);
    expect(isNonRetryable(of(['Fatal']), { type: 'FatalError' })).to.equal(false);
    expect(isNonRetryable(of(['FatalError']), { type: 'OtherError', details: ['FatalError'] })).to.equal(false);
  });

  it('a trailing * (or .*) is a prefix', () => {
    expect(isNonRetryable(of(['Auth.*']), { type: 'AuthenticationError' })).to.equal(true);
    expect(isNonRetryable(of(['Auth.*']), { type: 'handler_error', details: { error_class: 'Auth.TokenExpired' } })).to.equal(true);
    expect(isNonRetryable(of(['Auth*']), { type: 'AuthError' })).to.equal(true);
    expect(isNonRetryable(of(['Auth.*']), { type: 'OAuthError' })).to.equal(false);
    expect(isNonRetryable(of(['Auth.*']), { type: 'handler_error', code: 'handler_error' })).to.equal(false);
  });

  it('no policy, or an empty list: every error may be retried', () => {
    expect(isNonRetryable(undefined, { type: 'FatalError' })).to.equal(false);
    expect(isNonRetryable(of([]), { type: 'FatalError' })).to.equal(false);
  });
});

describe('gateway retry policy: options.retry', () => {
  const read = (retry: unknown) => {
    const issues: ValidationIssue[] = [];
    return { ...readRetryOptions(retry, issues), issues };
  };

  it("reads the suite's form: ISO 8601 durations, coefficient, strategy, jitter, names, exhaustion", () => {
    const {
      policy: read_,
      maxAttempts,
      issues,
    } = read({
      max_attempts: 5,
      initial_interval: 'PT1.5S',
      backoff_coefficient: 1,
      backoff_strategy: 'linear',
      max_interval: 'P1DT2H',
      jitter: false,
      non_retryable_errors: ['Auth.*'],
      on_exhaustion: 'dead_letter',
    });
    expect(issues).to.deep.equal([]);
    expect(maxAttempts).to.equal(5);
    expect(read_).to.deep.equal({
      backoff: 'linear',
      initialIntervalMs: 1500,
      backoffCoefficient: 1,
      maxIntervalMs: 26 * 3600 * 1000,
      jitter: false,
      nonRetryableErrors: ['Auth.*'],
      onExhaustion: 'dead_letter',
    });
  });

  it("OJS's defaults for the fields not given, jitter included; max_attempts alone records no policy", () => {
    expect(read({ initial_interval_ms: 250 }).policy).to.deep.equal({ ...DEFAULT_RETRY_POLICY, initialIntervalMs: 250 });
    expect(read({ max_attempts: 3, on_exhaustion: 'discard' })).to.deep.equal({ maxAttempts: 3, issues: [] });
  });

  it('refuses each bad field by name', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ backoff_coefficient: 0.5 }, 'options.retry.backoff_coefficient'],
      [{ max_attempts: -1 }, 'options.retry.max_attempts'],
      [{ max_attempts: 1.5 }, 'options.retry.max_attempts'],
      [{ initial_interval: '1s' }, 'options.retry.initial_interval'],
      [{ max_interval: 'PT' }, 'options.retry.max_interval'],
      [{ initial_interval_ms: -1 }, 'options.retry.initial_interval_ms'],
      [{ initial_interval: 'PT10S', max_interval: 'PT5S' }, 'options.retry.max_interval'],
      [{ backoff_type: 'fibonacci' }, 'options.retry.backoff_type'],
      [{ backoff_type: 'linear', backoff_strategy: 'constant' }, 'options.retry.backoff_strategy'],
      [{ jitter: 'yes' }, 'options.retry.jitter'],
      [{ non_retryable_errors: ['ok', ''] }, 'options.retry.non_retryable_errors'],
      [{ on_exhaustion: 'requeue' }, 'options.retry.on_exhaustion'],
    ];
    for (const [retry, path] of cases) {
      const { issues, policy: none } = read(retry);
      expect(
        issues.map((issue) => issue.path),
        JSON.stringify(retry),
      ).to.deep.equal([path]);
      expect(none, JSON.stringify(retry)).to.equal(undefined);
    }
    expect(read('fast').issues.map((issue) => issue.path)).to.deep.equal(['options.retry']);
  });
});
