import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { fieldTable, nullObject } from '../../common/nullObject.ts';

/** V8's own answer, in natives syntax (allowed for functions compiled after the flag is set). */
function hasFastProperties(object: object): boolean {
  setFlagsFromString('--allow-natives-syntax');
  // Natives syntax is compiled only at run time, after the flag: there is no other way to write it.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('a', 'return %HasFastProperties(a)')(object) as boolean;
}

for (const [name, make] of [
  ['nullObject', nullObject],
  ['fieldTable', fieldTable],
] as const) {
  describe(`a table of client-chosen words (${name})`, function () {
    it('inherits nothing: Object.prototype member names are absent until stored, then own keys', function () {
      const table = make<string>();
      for (const member of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) expect(table[member]).to.equal(undefined);
      table['__proto__'] = 'a';
      table['constructor'] = 'b';
      expect(Object.keys(table)).to.deep.equal(['__proto__', 'constructor']);
      expect(table['__proto__']).to.equal('a');
    });

    it('shares nothing between tables: a prototype, if any, is empty and frozen', function () {
      const one = make<string>();
      one['__proto__'] = 'x';
      one['toString'] = 'y';
      const two = make<string>();
      expect(Object.keys(two)).to.deep.equal([]);
      expect(two['__proto__']).to.equal(undefined);
      const proto = Object.getPrototypeOf(two) as object | null;
      if (proto) {
        expect(Reflect.ownKeys(proto)).to.deep.equal([]);
        expect(Object.isFrozen(proto)).to.equal(true);
        expect(Object.getPrototypeOf(proto)).to.equal(null);
      }
    });
  });
}

describe('fieldTable', function () {
  it('keeps V8 fast properties as header fields are stored (Object.create(null) starts a dictionary)', function () {
    const table = fieldTable<string>();
    for (const name of ['content-type', 'content-length', 'date', 'connection', 'keep-alive']) table[name] = 'v';
    expect(hasFastProperties(table)).to.equal(true);
    expect(hasFastProperties(nullObject())).to.equal(false);
  });
});
