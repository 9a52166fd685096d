// Whether a client's address is on a list of addresses and CIDR subnets (Apache's `Require ip`,
// php-fpm's listen.allowed_clients): one rule for the proxy's status pages and the host's admission.
import { BlockList, isIPv4 } from 'node:net';
import type { AllowedClient } from './settingParsers.ts';

export function allowList(clients: readonly AllowedClient[]): BlockList {
  const list = new BlockList();
  for (const { address, prefix, family } of clients) list.addSubnet(address, prefix, family);
  return list;
}

export function allowed(list: BlockList, address: string | undefined): boolean {
  if (!address) return false;
  // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d: BlockList checks those against the IPv4 rules itself.
  return list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

const LOOPBACK = allowList([
  { address: '127.0.0.0', prefix: 8, family: 'ipv4' },
  { address: '::1', prefix: 128, family: 'ipv6' },
]);

/** 127.0.0.0/8 and ::1 in any spelling (`::ffff:127.0.0.1` included). */
export function isLoopbackAddress(address: string | undefined): boolean {
  return allowed(LOOPBACK, address);
}
