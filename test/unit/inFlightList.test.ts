import { expect } from 'chai';
import { InFlightList } from '../../proxy/forward/inFlightList.ts';

describe('the in-flight list', function () {
  it('counts and walks what was added and not deleted, oldest first', function () {
    const list = new InFlightList<string>();
    const a = list.add('a');
    list.add('b');
    const c = list.add('c');
    list.add('d');
    list.delete(c);
    list.delete(a);
    expect(list.size).to.equal(2);
    expect([...list]).to.deep.equal(['b', 'd']);
  });

  it('ignores a second delete of the same entry, and takes the newest and the oldest out cleanly', function () {
    const list = new InFlightList<string>();
    const a = list.add('a');
    const b = list.add('b');
    list.delete(b);
    list.delete(b);
    expect(list.size).to.equal(1);
    expect([...list]).to.deep.equal(['a']);
    const c = list.add('c');
    expect([...list]).to.deep.equal(['a', 'c']);
    list.delete(list.add('d'));
    list.delete(c);
    expect([...list]).to.deep.equal(['a']);
    list.add('e');
    list.delete(a);
    expect([...list]).to.deep.equal(['e']);
    expect(list.size).to.equal(1);
  });

  it("clears a deleted entry's links, so it holds no other item alive", function () {
    const list = new InFlightList<object>();
    list.add({});
    const middle = list.add({});
    list.add({});
    list.delete(middle);
    expect(middle.prev).to.equal(undefined);
    expect(middle.next).to.equal(undefined);
  });

  it('lets the walk delete the item it was just given', function () {
    const list = new InFlightList<number>();
    const entries = [1, 2, 3, 4].map((n) => list.add(n));
    const seen: number[] = [];
    for (const n of list) {
      seen.push(n);
      list.delete(entries[n - 1]);
    }
    expect(seen).to.deep.equal([1, 2, 3, 4]);
    expect(list.size).to.equal(0);
    expect([...list]).to.deep.equal([]);
  });
});
