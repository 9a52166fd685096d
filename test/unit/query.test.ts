import { expect } from 'chai';
import { arrayQuery, MAX_INPUT_VARS, parsePhpQuery, phpUrlDecode } from '../../host/controller/query.ts';

const q = (raw: string) => parsePhpQuery(raw).query;
const has = (obj: object, key: string): boolean => Object.prototype.hasOwnProperty.call(obj, key);

/** mulberry32: a tiny seeded PRNG, so the fuzz run is the same every time. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('phpUrlDecode', () => {
  it('returns a string without + or % unchanged', () => {
    expect(phpUrlDecode('abc.def[x]')).to.equal('abc.def[x]');
  });

  it('decodes + and %20 to a space', () => {
    expect(phpUrlDecode('a+b%20c')).to.equal('a b c');
  });

  it('decodes %2B to a literal plus, not a space', () => {
    expect(phpUrlDecode('1%2B1')).to.equal('1+1');
  });

  it('accepts upper- and lower-case hex digits', () => {
    expect(phpUrlDecode('%41%4a%4A')).to.equal('AJJ');
  });

  it('keeps an invalid escape such as %zz literally', () => {
    expect(phpUrlDecode('%zz')).to.equal('%zz');
  });

  it('keeps a truncated escape at the end literally', () => {
    expect(phpUrlDecode('100%')).to.equal('100%');
    expect(phpUrlDecode('%4')).to.equal('%4');
  });

  it('keeps a lone % and decodes the valid escape right after it', () => {
    expect(phpUrlDecode('%%41')).to.equal('%A');
  });

  it('decodes a multi-byte UTF-8 sequence to one character', () => {
    expect(phpUrlDecode('%C3%A9t%C3%A9')).to.equal('été');
  });

  it('decodes %00 to a NUL character', () => {
    expect(phpUrlDecode('a%00b')).to.equal('a\0b');
  });
});

describe('parsePhpQuery with latin1 (the bytes PHP holds)', () => {
  it('keeps a byte that is not UTF-8 as one character, where utf8 replaces it with U+FFFD', () => {
    expect(parsePhpQuery('y=%E9&n%E9=%C3%A9').query).to.deep.equal({ y: '\ufffd', 'n\ufffd': 'é' });
    const bytes = parsePhpQuery('y=%E9&n%E9=%C3%A9', MAX_INPUT_VARS, 'latin1').query;
    expect(bytes).to.deep.equal({ y: '\xe9', 'n\xe9': '\xc3\xa9' });
    expect(Buffer.from(bytes.y as string, 'latin1')).to.deep.equal(Buffer.from([0xe9]));
  });
});

describe('parsePhpQuery', () => {
  describe('plain names and values', () => {
    it('parses name=value pairs and gives name= the empty string', () => {
      expect(q('sn=123&no=')).to.deep.equal({ sn: '123', no: '' });
    });

    it('gives a flag without = the empty string', () => {
      expect(q('all_alarm&all')).to.deep.equal({ all_alarm: '', all: '' });
    });

    it('lets the last duplicate win while keeping the first position', () => {
      const query = q('a=1&b=2&a=3');
      expect(query).to.deep.equal({ a: '3', b: '2' });
      expect(Object.keys(query)).to.deep.equal(['a', 'b']);
    });

    it('splits name and value at the first = only', () => {
      expect(q('a=b=c')).to.deep.equal({ a: 'b=c' });
    });

    it('returns an empty query and no warnings for the empty string', () => {
      expect(parsePhpQuery('')).to.deep.equal({ query: {}, warnings: [] });
    });
  });

  describe('decoding', () => {
    it('decodes + and %20 in values to a space', () => {
      expect(q('s=a+b%20c')).to.deep.equal({ s: 'a b c' });
    });

    it('keeps an invalid escape %zz literally', () => {
      expect(q('v=%zz&w=5%')).to.deep.equal({ v: '%zz', w: '5%' });
    });

    it('decodes a %3D in the name into the name instead of splitting there', () => {
      expect(q('a%3Db=c')).to.deep.equal({ 'a=b': 'c' });
    });

    it('decodes %26 in a value without splitting the pair', () => {
      expect(q('a=x%26y=z&b=1')).to.deep.equal({ a: 'x&y=z', b: '1' });
    });

    it('ends a name at an encoded NUL, as a C string does', () => {
      expect(q('a%00b=1')).to.deep.equal({ a: '1' });
    });

    it('keeps an encoded NUL inside a value (values are binary-safe)', () => {
      expect(q('c=x%00y')).to.deep.equal({ c: 'x\0y' });
    });
  });

  describe('skipped pieces', () => {
    it('skips empty pieces between, before and after separators', () => {
      expect(q('&a=1&&b=2&')).to.deep.equal({ a: '1', b: '2' });
    });

    it('returns nothing for separators only', () => {
      expect(q('&&&')).to.deep.equal({});
    });

    it('skips a piece with an empty name', () => {
      expect(q('=x&a=1')).to.deep.equal({ a: '1' });
    });

    it('skips a name made only of spaces', () => {
      expect(q('++=1&%20=2')).to.deep.equal({});
    });

    it('skips a name that starts with [', () => {
      expect(q('[a]=1')).to.deep.equal({});
    });
  });

  describe('name mangling', () => {
    it('turns a dot in the name into _', () => {
      expect(q('b.c=1')).to.deep.equal({ b_c: '1' });
    });

    it('turns a space in the name into _', () => {
      expect(q('b c=1')).to.deep.equal({ b_c: '1' });
    });

    it('turns an encoded space (+ or %20) in the name into _', () => {
      expect(q('b+c=1&d%20e=2')).to.deep.equal({ b_c: '1', d_e: '2' });
    });

    it('drops leading spaces of the name', () => {
      expect(q(' a=1')).to.deep.equal({ a: '1' });
      expect(q('%20%20b=2')).to.deep.equal({ b: '2' });
      expect(q('+c=3')).to.deep.equal({ c: '3' });
    });

    it('keeps dots and spaces inside an index', () => {
      expect(q('a.b[c.d e]=1')).to.deep.equal({ a_b: { 'c.d e': '1' } });
    });

    it('turns an unclosed [ into _ (a[b=1 is a_b)', () => {
      expect(q('a[b=1')).to.deep.equal({ a_b: '1' });
    });

    it('turns  , . and [ after an unclosed [ into _ too, as PHP 8 does (a[b.c d[e=1 is a_b_c_d_e)', () => {
      expect(q('a[b.c d[e=1')).to.deep.equal({ a_b_c_d_e: '1' });
    });

    it('ignores anything after the last ] (a[b]c=1 is a.b)', () => {
      expect(q('a[b]c=1')).to.deep.equal({ a: { b: '1' } });
    });

    it('stores into the last closed index when a later [ is unclosed', () => {
      expect(q('a[b][c=1')).to.deep.equal({ a: { b: '1' } });
    });
  });

  describe('arrays', () => {
    it('builds a list from a[]= pairs', () => {
      const query = q('a[]=1&a[]=2');
      expect(query).to.deep.equal({ a: ['1', '2'] });
      expect(Array.isArray(query.a)).to.equal(true);
    });

    it('builds an object from a[k]= pairs', () => {
      const query = q('a[x]=1&a[y]=2');
      expect(query).to.deep.equal({ a: { x: '1', y: '2' } });
      expect(Array.isArray(query.a)).to.equal(false);
    });

    it('nests a[x][y]=1', () => {
      expect(q('a[x][y]=1')).to.deep.equal({ a: { x: { y: '1' } } });
    });

    it('nests appends (a[][]=1&a[][]=2 gives two one-element lists)', () => {
      expect(q('a[][]=1&a[][]=2')).to.deep.equal({ a: [['1'], ['2']] });
    });

    it('appends after the highest integer key (a[]=1&a[5]=2&a[]=3)', () => {
      const query = q('a[]=1&a[5]=2&a[]=3');
      expect(query).to.deep.equal({ a: { 0: '1', 5: '2', 6: '3' } });
      expect(Array.isArray(query.a)).to.equal(false);
    });

    it('gives a list when explicit keys are exactly 0..n-1 in order', () => {
      const query = q('a[0]=x&a[1]=y');
      expect(query).to.deep.equal({ a: ['x', 'y'] });
      expect(Array.isArray(query.a)).to.equal(true);
    });

    it('gives an object when integer keys are out of order', () => {
      const query = q('a[1]=x&a[0]=y');
      expect(Array.isArray(query.a)).to.equal(false);
      expect(query.a).to.deep.equal({ 0: 'y', 1: 'x' });
    });

    it('keeps a key with a leading zero apart from the integer key', () => {
      expect(q('a[01]=x&a[1]=y')).to.deep.equal({ a: { '01': 'x', 1: 'y' } });
    });

    it('appends after a string-looking integer key (a[1]=x&a[]=y)', () => {
      expect(q('a[1]=x&a[]=y')).to.deep.equal({ a: { 1: 'x', 2: 'y' } });
    });

    it('replaces a scalar with an array when the name is used with []', () => {
      expect(q('a=1&a[]=2')).to.deep.equal({ a: ['2'] });
    });

    it('replaces an array with a scalar when the plain name comes last', () => {
      expect(q('a[]=1&a=2')).to.deep.equal({ a: '2' });
    });

    it('keeps a variable nested exactly 64 levels deep', () => {
      const query = q('a' + '[k]'.repeat(64) + '=v');
      let expected: unknown = 'v';
      for (let i = 0; i < 64; i++) expected = { k: expected };
      expect(query).to.deep.equal({ a: expected });
    });

    it('never stores the value of a variable nested 65 levels deep', () => {
      const query = q('a' + '[k]'.repeat(65) + '=deepvalue&b=1');
      expect(JSON.stringify(query)).not.to.include('deepvalue');
      expect(query.b).to.equal('1');
    });

    it('drops the whole variable, earlier values included, when nested past 64 levels', () => {
      expect(q('a[x]=1&a' + '[k]'.repeat(65) + '=v&b=1')).to.deep.equal({ b: '1' });
    });

    it('appends for an index of one whitespace character (a[ ]=1&a[ ]=2), as PHP skips one isspace()', () => {
      expect(q('a[ ]=1&a[%09]=2')).to.deep.equal({ a: ['1', '2'] });
    });

    it('keeps the space of an index that has more than whitespace (a[ x]=1)', () => {
      expect(q('a[ x]=1')).to.deep.equal({ a: { ' x': '1' } });
    });
  });

  describe('prototype safety', () => {
    it('stores __proto__ as a plain key without touching Object.prototype', () => {
      const query = q('__proto__=1');
      expect(has(query, '__proto__')).to.equal(true);
      expect(query['__proto__']).to.equal('1');
      expect(Object.keys(query)).to.deep.equal(['__proto__']);
      expect(Object.getPrototypeOf({})).to.equal(Object.prototype);
    });

    it('stores constructor[x] as a plain key and does not pollute Object.prototype', () => {
      const query = q('constructor[x]=1');
      expect(has(query, 'constructor')).to.equal(true);
      expect(query.constructor).to.deep.equal({ x: '1' });
      expect(({} as Record<string, unknown>).x).to.equal(undefined);
    });

    it('does not pollute Object.prototype through __proto__[x]', () => {
      const query = q('__proto__[polluted]=yes');
      expect(query['__proto__']).to.deep.equal({ polluted: 'yes' });
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      expect(has(Object.prototype, 'polluted')).to.equal(false);
    });

    it('does not pollute through a nested __proto__ key', () => {
      const query = q('a[__proto__][polluted2]=yes');
      expect(has(query.a as object, '__proto__')).to.equal(true);
      expect(({} as Record<string, unknown>).polluted2).to.equal(undefined);
    });
  });

  describe('max_input_vars', () => {
    it('defaults to PHP’s 1000', () => {
      expect(MAX_INPUT_VARS).to.equal(1000);
    });

    it('keeps the first 3 of 4 with a limit of 3 and warns exactly once', () => {
      const { query, warnings } = parsePhpQuery('a=1&b=2&c=3&d=4', 3);
      expect(query).to.deep.equal({ a: '1', b: '2', c: '3' });
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include('Input variables exceeded 3');
    });

    it('stops at the first piece over the limit, warning once however many follow', () => {
      const { query, warnings } = parsePhpQuery('a=1&b=2&c=3&d=4&e=5&f=6', 3);
      expect(query).to.deep.equal({ a: '1', b: '2', c: '3' });
      expect(warnings).to.have.length(1);
    });

    it('does not warn at exactly the limit', () => {
      expect(parsePhpQuery('a=1&b=2&c=3', 3)).to.deep.equal({ query: { a: '1', b: '2', c: '3' }, warnings: [] });
    });

    it('does not count empty pieces', () => {
      expect(parsePhpQuery('a=1&&b=2&&&c=3&', 3).warnings).to.deep.equal([]);
    });

    it('counts a piece with an empty name even though it is dropped', () => {
      const { query, warnings } = parsePhpQuery('=x&a=1&b=2&c=3', 3);
      expect(query).to.deep.equal({ a: '1', b: '2' });
      expect(warnings).to.have.length(1);
    });

    it('cuts at 1000 by default', () => {
      const raw = Array.from({ length: 1001 }, (_, i) => `v${i}=${i}`).join('&');
      const { query, warnings } = parsePhpQuery(raw);
      expect(Object.keys(query)).to.have.length(1000);
      expect(query.v999).to.equal('999');
      expect(has(query, 'v1000')).to.equal(false);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include('Input variables exceeded 1000');
    });
  });

  describe('robustness', () => {
    it('never throws on thousands of random strings of [ ] = & % + . space a 1 NUL', () => {
      const alphabet = ['[', ']', '=', '&', '%', '+', '.', ' ', 'a', '1', '\0'];
      const random = prng(0x5eed);
      for (let n = 0; n < 5000; n++) {
        const length = Math.floor(random() * 24);
        let raw = '';
        for (let i = 0; i < length; i++) raw += alphabet[Math.floor(random() * alphabet.length)];
        let result: ReturnType<typeof parsePhpQuery> | undefined;
        expect(() => {
          result = parsePhpQuery(raw);
        }, JSON.stringify(raw)).not.to.throw();
        expect(result!.query, JSON.stringify(raw)).to.be.an('object');
        expect(result!.warnings, JSON.stringify(raw)).to.deep.equal([]);
      }
    });

    it('parses random queries, plain and not, exactly as the general PhpArray parse does, keys in the same order', () => {
      // Names from a small pool, so duplicates and integer-like keys (which objects order first) come often, and
      // pieces that make every kind of name that is not plain: NUL, spaces, dots, brackets, raw or encoded.
      const names = ['a', 'b', '10', '2', '01', '-1', '4294967295', '__proto__', 'x-y'];
      const oddities = ['+', '.', ' ', '[', ']', '%00', '%20', '%2E', '%2e', '%5B', '%5b', '%5D', '%2B', '%E9', '%', '&', '='];
      const random = prng(0xa11ce);
      const pick = <T>(from: T[]) => from[Math.floor(random() * from.length)];
      let plain = 0;
      for (let n = 0; n < 5000; n++) {
        const pieces = Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
          const name = random() < 0.3 ? pick(names) + pick(oddities) : pick(names);
          return random() < 0.2 ? name : `${name}=${pick(names)}${random() < 0.2 ? pick(oddities) : ''}`;
        });
        const raw = pieces.join('&');
        for (const encoding of ['utf8', 'latin1'] as const) {
          const general = arrayQuery(raw, 3, encoding);
          const parsed = parsePhpQuery(raw, 3, encoding);
          expect(parsed, JSON.stringify(raw)).to.deep.equal(general);
          expect(Object.keys(parsed.query), JSON.stringify(raw)).to.deep.equal(Object.keys(general.query));
        }
        if (pieces.length <= 3 && pieces.every((piece) => names.includes(piece.split('=', 1)[0]))) plain += 1;
      }
      // Both kinds were drawn, so both paths were compared.
      expect(plain).to.be.above(1000);
      expect(5000 - plain).to.be.above(1000);
    });

    it('keeps every name of random queries over __proto__, constructor and the like as an own key, polluting nothing', () => {
      // Whole names, not characters: random characters would almost never spell these.
      const names = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'a', '0', '1'];
      const random = prng(0xc0ffee);
      const pick = (from: string[]) => from[Math.floor(random() * from.length)];
      const prototypeNames = Object.getOwnPropertyNames(Object.prototype);
      for (let n = 0; n < 2000; n++) {
        const pieces = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({
          path: Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(names)),
          value: pick(names),
        }));
        const raw = pieces.map(({ path: [base, ...keys], value }) => `${base}${keys.map((k) => `[${k}]`).join('')}=${value}`).join('&');
        const { query, warnings } = parsePhpQuery(raw);
        expect(warnings, raw).to.deep.equal([]);
        for (const [base] of pieces.map((p) => p.path)) expect(has(query, base), `${raw}: ${base}`).to.equal(true);
        // The last piece wins wherever its path leads, as in PHP.
        const last = pieces.at(-1)!;
        const reached = last.path.reduce<unknown>(
          (at, key) => (typeof at === 'object' && at !== null && has(at, key) ? (at as Record<string, unknown>)[key] : undefined),
          query,
        );
        expect(reached, raw).to.equal(last.value);
      }
      expect(Object.getOwnPropertyNames(Object.prototype)).to.deep.equal(prototypeNames);
      expect(Object.getPrototypeOf({})).to.equal(Object.prototype);
    });
  });
});
