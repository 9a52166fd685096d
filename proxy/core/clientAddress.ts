// The client as the logs show it: Apache's %a and `[client ip:port]`, shared by error.log, access.log and
// the request context (which keeps a request's address after its socket is gone).

/** What a client line needs of a socket; `{}` when the socket is gone already. */
export type ClientSocket = { remoteAddress?: string; remotePort?: number };

/** `ip:port` of the client, as Apache's `[client %a]` shows it (IPv4-mapped addresses unwrapped). */
export function clientOf(socket: ClientSocket): string {
  return `${clientAddress(socket.remoteAddress)}:${socket.remotePort ?? 0}`;
}

export function clientAddress(address: string | undefined): string {
  if (!address) return '-';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}
