import { expect } from 'chai';
import { LOCAL_UPSTREAM_LABEL, type Upstream } from '../../common/settingParsers.ts';
import { Upstreams } from '../../proxy/forward/upstreams.ts';

const A: Upstream = { kind: 'unix', path: '/run/a.sock' };
const B: Upstream = { kind: 'tcp', host: '10.0.0.6', port: 9000 };
const C: Upstream = { kind: 'tcp', host: '10.0.0.7', port: 9000 };

describe('the upstream rotation', () => {
  let clock: number;
  let said: string[];
  const make = (list: Upstream[], maxFails = 1) =>
    new Upstreams(
      list,
      { maxFails, failTimeoutMs: 10_000 },
      (m) => said.push(m),
      () => clock,
    );
  beforeEach(() => {
    clock = 1_000_000;
    said = [];
  });

  it('goes round the upstreams in order', () => {
    const upstreams = make([A, B, C]);
    expect(Array.from({ length: 6 }, () => upstreams.pick()!.name)).to.deep.equal([
      'unix:/run/a.sock',
      'http://10.0.0.6:9000',
      'http://10.0.0.7:9000',
      'unix:/run/a.sock',
      'http://10.0.0.6:9000',
      'http://10.0.0.7:9000',
    ]);
  });

  it('skips an upstream for fail_timeout after max_fails failed connects, then tries it again', () => {
    const upstreams = make([A, B], 2);
    const [a] = upstreams.all;
    upstreams.connectFailed(a);
    expect(upstreams.snapshot()[0].state, 'one failure of two allowed').to.equal('up');
    upstreams.connectFailed(a);
    expect(said).to.deep.equal(['upstream unix:/run/a.sock out of the rotation for 10 s after 2 failed connect(s)']);
    expect(Array.from({ length: 4 }, () => upstreams.pick()!.name)).to.deep.equal(Array(4).fill('http://10.0.0.6:9000'));
    expect(upstreams.snapshot()[0]).to.deep.include({ state: 'down', retryInSeconds: 10, fails: 2 });
    clock += 10_000;
    expect(Array.from({ length: 2 }, () => upstreams.pick()!.name)).to.have.members(['unix:/run/a.sock', 'http://10.0.0.6:9000']);
  });

  it('says once when an upstream comes back, and counts its failures afresh', () => {
    const upstreams = make([A, B]);
    const [a] = upstreams.all;
    upstreams.connectFailed(a);
    upstreams.connectFailed(a); // while already down: no second message
    upstreams.reached(a);
    upstreams.reached(a);
    expect(said).to.deep.equal([
      'upstream unix:/run/a.sock out of the rotation for 10 s after 1 failed connect(s)',
      'upstream unix:/run/a.sock back in the rotation',
    ]);
    expect(upstreams.snapshot()[0]).to.deep.include({ state: 'up', fails: 2 });
  });

  it('never picks an upstream this request already failed on, and says when none is left', () => {
    const upstreams = make([A, B]);
    const [a, b] = upstreams.all;
    expect(upstreams.pick(new Set([a]))).to.equal(b);
    expect(upstreams.pick(new Set([a, b]))).to.equal(undefined);
  });

  it('when every upstream is out, still tries the one due back first rather than refuse', () => {
    const upstreams = make([A, B]);
    const [a, b] = upstreams.all;
    upstreams.connectFailed(b);
    clock += 1_000;
    upstreams.connectFailed(a);
    expect(upstreams.pick()).to.equal(b);
  });

  it('never takes a single upstream out of the rotation (there is nothing else to send to)', () => {
    const upstreams = make([A]);
    upstreams.connectFailed(upstreams.all[0]);
    expect(said).to.deep.equal([]);
    expect(upstreams.snapshot()[0].state).to.equal('up');
  });
});

describe("a reload's new upstreams", () => {
  it('go on counting from the old ones where the upstream stays, and start in the rotation', () => {
    const old = new Upstreams([A, B], { maxFails: 1, failTimeoutMs: 10_000 });
    for (let i = 0; i < 3; i++) old.pick()!.requests += 1;
    old.connectFailed(old.all[1]);
    const fresh = new Upstreams([B, C], { maxFails: 1, failTimeoutMs: 10_000 });
    fresh.countOn(old);
    expect(fresh.snapshot().map(({ name, state, requests, fails }) => [name, state, requests, fails])).to.deep.equal([
      ['http://10.0.0.6:9000', 'up', 1, 1],
      ['http://10.0.0.7:9000', 'up', 0, 0],
    ]);
  });
});

describe("an upstream's /metrics label", () => {
  it('is the configured upstream as given, unless it is labelled (the launcher labels its own socket `local`)', () => {
    const upstreams = new Upstreams([A, B, { kind: 'unix', path: '/tmp/extqs-x1y2z3/host.sock', label: LOCAL_UPSTREAM_LABEL }], {
      maxFails: 1,
      failTimeoutMs: 1,
    });
    expect(upstreams.snapshot().map((u) => [u.name, u.label])).to.deep.equal([
      ['unix:/run/a.sock', 'unix:/run/a.sock'],
      ['http://10.0.0.6:9000', 'http://10.0.0.6:9000'],
      ['unix:/tmp/extqs-x1y2z3/host.sock', 'local'],
    ]);
  });
});
