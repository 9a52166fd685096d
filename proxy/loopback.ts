// Whether a client is on this machine, from the address of its socket: the only address a client cannot
// choose (X-Forwarded-For and its kind are the client's word). `extqs dev` shows a controller's error with
// its stack to such a client only.
import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * 127.0.0.0/8 and ::1 in any spelling; BlockList also matches 127.x written as an IPv4-mapped IPv6
 * address (`::ffff:127.0.0.1`, a dual-stack socket's form).
 */
export function isLoopback(address: string | undefined): boolean {
  const family = isIP(address ?? '');
  return family !== 0 && LOOPBACK.check(address!, family === 4 ? 'ipv4' : 'ipv6');
}
