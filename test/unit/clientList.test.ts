// Whether a client's address is on an allow list (common/clientList.ts): the rule of --host-allow and the
// status pages' Require ip, with subnets wider than one address, both families, and IPv4-mapped IPv6.
import { expect } from 'chai';
import { allowed, allowList, isLoopbackAddress } from '../../common/clientList.ts';

describe('allow lists of addresses and subnets (common/clientList.ts)', function () {
  const list = allowList([
    { address: '10.1.0.0', prefix: 16, family: 'ipv4' },
    { address: '192.0.2.7', prefix: 32, family: 'ipv4' },
    { address: '2001:db8::', prefix: 32, family: 'ipv6' },
  ]);

  it('admits every address of a subnet, not only its first', function () {
    expect(allowed(list, '10.1.0.0')).to.equal(true);
    expect(allowed(list, '10.1.200.3')).to.equal(true);
    expect(allowed(list, '10.1.255.255')).to.equal(true);
    expect(allowed(list, '2001:db8:ffff::1')).to.equal(true);
  });

  it('refuses the addresses just outside a subnet, and beside a single address', function () {
    expect(allowed(list, '10.0.255.255')).to.equal(false);
    expect(allowed(list, '10.2.0.0')).to.equal(false);
    expect(allowed(list, '192.0.2.7')).to.equal(true);
    expect(allowed(list, '192.0.2.8')).to.equal(false);
    expect(allowed(list, '2001:db9::1')).to.equal(false);
  });

  it('reads an IPv4 client that a dual-stack listener saw as ::ffff:a.b.c.d as its IPv4 address', function () {
    expect(allowed(list, '::ffff:10.1.2.3')).to.equal(true);
    expect(allowed(list, '::ffff:10.2.2.3')).to.equal(false);
    // Not an IPv4 address after the prefix: checked as the IPv6 address it is.
    expect(allowed(allowList([{ address: '::ffff:0:0', prefix: 96, family: 'ipv6' }]), '::ffff:a00:1')).to.equal(true);
  });

  it('refuses a client without an address (a closed socket has none)', function () {
    expect(allowed(list, undefined)).to.equal(false);
    expect(allowed(list, '')).to.equal(false);
  });

  it('knows the loopback addresses in any spelling, and nothing else', function () {
    for (const address of ['127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1'])
      expect(isLoopbackAddress(address), address).to.equal(true);
    for (const address of ['128.0.0.1', '126.255.255.255', '::2', '::ffff:10.0.0.1', undefined])
      expect(isLoopbackAddress(address), String(address)).to.equal(false);
  });
});
