/** The UUIDv7 ids every backend and the gateway hand out (RFC 9562 §5.7; ojs-core §5.1). */
import { expect } from 'chai';
import { uuidv7 } from '../src/uuid-v7.js';
import { UUID_V7 } from '../server/ojs-request.js';

describe('uuidv7', () => {
  it('is a lowercase UUIDv7 whose first 48 bits are the given Unix ms', () => {
    for (const ms of [0, 1, 1_700_000_000_123, 2 ** 48 - 1]) {
      const id = uuidv7(ms);
      expect(id).to.match(UUID_V7);
      expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).to.equal(ms);
    }
  });

  it('draws new random bits for every id, across refills of its random pool', () => {
    const ids = Array.from({ length: 2000 }, () => uuidv7(1_700_000_000_000));
    expect(new Set(ids).size).to.equal(ids.length);
    expect(new Set(ids.map((id) => id.slice(14)))).to.have.length(ids.length);
    for (const id of ids) expect(id).to.match(UUID_V7);
  });
});
