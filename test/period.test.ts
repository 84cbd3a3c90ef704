import { expect } from 'chai';
import { addPeriod, parsePeriod } from '../src/internal.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('§7 ISO 8601 periods', function () {
  it('parses every component of the §13 grammar, weeks and fractional seconds included', function () {
    expect(parsePeriod('P1Y2M3W4DT5H6M7.25S')).to.deep.include({
      years: 1,
      months: 2,
      weeks: 3,
      days: 4,
      hours: 5,
      minutes: 6,
      seconds: 7.25,
      calendar: true,
      fixedMs: null,
      fixedPartMs: ((3 * 7 + 4) * 24 * 3600 + 5 * 3600 + 6 * 60 + 7.25) * 1000,
    });
    expect(parsePeriod('PT0.5S')).to.deep.include({ seconds: 0.5, calendar: false, fixedMs: 500 });
    expect(parsePeriod('P1W').fixedMs).to.equal(7 * 86_400_000);
    expect(parsePeriod('PT90M').fixedMs).to.equal(5_400_000);
    expect(parsePeriod('P1DT1H').fixedMs).to.equal(90_000_000);
  });

  it('refuses what is not ISO 8601', function () {
    for (const bad of ['', 'P', 'PT', 'P1DT', 'T1H', 'P1H', 'PT1D', 'P1.5D', 'PT1,5S', 'P-1D', 'p1d', 'P1D ', 'PT0S', 'P0D']) {
      expect(() => parsePeriod(bad), bad).to.throw();
    }
  });

  const rows: [string, string, string, string][] = [
    ['fixed hours', '2026-02-12T10:30:00.000Z', 'PT1H', '2026-02-12T11:30:00.000Z'],
    ['fractional seconds', '2026-02-12T10:30:00.000Z', 'PT0.25S', '2026-02-12T10:30:00.250Z'],
    ['sub-millisecond fractions round to the ms', '2026-02-12T10:30:00.000Z', 'PT0.0006S', '2026-02-12T10:30:00.001Z'],
    ['P1D is 24 hours on the UTC calendar', '2026-03-28T12:00:00.000Z', 'P1D', '2026-03-29T12:00:00.000Z'],
    ['P1M from 31 January: last day of February', '2026-01-31T12:00:00.000Z', 'P1M', '2026-02-28T12:00:00.000Z'],
    ['P1M from 31 January in a leap year', '2024-01-31T00:00:00.000Z', 'P1M', '2024-02-29T00:00:00.000Z'],
    ['P1M from 30 April', '2026-04-30T08:00:00.000Z', 'P1M', '2026-05-30T08:00:00.000Z'],
    ['P1Y from 29 February', '2024-02-29T00:00:00.000Z', 'P1Y', '2025-02-28T00:00:00.000Z'],
    ['P4Y from 29 February', '2024-02-29T00:00:00.000Z', 'P4Y', '2028-02-29T00:00:00.000Z'],
    ['P1M1D adds the month first, then the day', '2026-01-31T00:00:00.000Z', 'P1M1D', '2026-03-01T00:00:00.000Z'],
    ['P12M equals P1Y', '2026-05-15T00:00:00.000Z', 'P12M', '2027-05-15T00:00:00.000Z'],
    ['P1Y2M3W4DT5H6M7S', '2026-01-01T00:00:00.000Z', 'P1Y2M3W4DT5H6M7S', '2027-03-26T05:06:07.000Z'],
    ['year rollover', '2026-12-31T23:59:59.999Z', 'PT0.001S', '2027-01-01T00:00:00.000Z'],
  ];
  for (const [title, start, period, end] of rows) {
    it(`created_at + period: ${title} (${start} + ${period})`, function () {
      expect(iso(addPeriod(at(start), period))).to.equal(end);
    });
  }

  it('refuses a period that does not fit in a date', function () {
    expect(() => parsePeriod('P999999999Y')).to.throw(/too long/);
  });
});
