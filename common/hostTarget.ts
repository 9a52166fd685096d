// How a client reaches one host process, a host primary or one of its workers: its unix socket, TCP, or TLS
// with this side's certificate (mutual TLS, docs/design.md §12). Every client of a host connects through one
// (the proxy's engines, its /server-status and /metrics, its readiness probe and worker-table follower, the
// host primary's relay to its workers), so none builds its own address or forgets to verify the host.
import { readFileSync } from 'node:fs';
import {
  Agent,
  request as requestPlain,
  type AgentOptions,
  type ClientRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as TlsAgent, request as requestTls } from 'node:https';
import { connect as connectPlain, isIP, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { formatUpstream, type Upstream } from './settingParsers.ts';
import type { ProxyConfig } from './settings.ts';

/** What this side shows an https:// host and checks it with: the CA of the hosts' certificates, its own certificate and key. */
export interface ClientTls {
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** Reads the files of --mtls-ca, --mtls-cert and --mtls-key (once, at start); undefined without them: plain hosts only. */
export function readClientTls(settings: Pick<ProxyConfig, 'mtlsCa' | 'mtlsCert' | 'mtlsKey'>): ClientTls | undefined {
  const { mtlsCa: ca, mtlsCert: cert, mtlsKey: key } = settings;
  if (ca === undefined || cert === undefined || key === undefined) return undefined;
  return { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key) };
}

/** Where node:http connects: a unix socket, or a host and port with the protocol (http-proxy picks its module by it). */
export type HostAddress = { socketPath: string } | { host: string; port: number; protocol: 'http:' | 'https:' };

export class HostTarget {
  /** Its address as logs and metrics name it (formatUpstream()): the connections to one address are kept together. */
  readonly address: string;
  readonly where: HostAddress;
  private readonly tlsOptions: ConnectionOptions | undefined;

  constructor(
    readonly upstream: Upstream,
    clientTls?: ClientTls,
  ) {
    this.address = formatUpstream(upstream);
    if (upstream.kind === 'unix') {
      this.where = { socketPath: upstream.path };
      return;
    }
    this.where = { host: upstream.host, port: upstream.port, protocol: upstream.tls ? 'https:' : 'http:' };
    if (!upstream.tls || !clientTls) return;
    const { ca, cert, key } = clientTls;
    // The host's certificate must name the upstream's host: said here, or node:https would check the name in the
    // request's Host field (a client's, when forwarded). An IP address is no server name (RFC 6066 §3): '' sends
    // none, and Node checks the address. rejectUnauthorized is Node's default, said so no caller can lose it.
    const servername = isIP(upstream.host) ? '' : upstream.host;
    this.tlsOptions = { ca, cert, key, servername, rejectUnauthorized: true };
  }

  /** The TLS options of a connection to it, undefined for a plain one; throws for an https:// one without a pair. */
  get tls(): ConnectionOptions | undefined {
    const { upstream } = this;
    if (upstream.kind !== 'tcp' || !upstream.tls) return undefined;
    // The settings refuse an https:// upstream without the three files (common/settings.ts).
    if (!this.tlsOptions) throw new Error(`${upstream.host}: an https:// upstream without --mtls-cert, --mtls-key and --mtls-ca`);
    return this.tlsOptions;
  }

  /** A new connection; `connected` once a request may be written on it (after the TLS handshake, for https://). */
  connect(connected: () => void): Socket {
    const { upstream } = this;
    if (upstream.kind === 'unix') return connectPlain({ path: upstream.path }, connected);
    const tls = this.tls;
    const { host, port } = upstream;
    return tls ? connectTls({ host, port, ...tls }, connected) : connectPlain({ host, port }, connected);
  }

  /** An HTTP request to it: `options` say the rest (path, method, headers, agent, timeout). */
  request(options: RequestOptions, answered?: (res: IncomingMessage) => void): ClientRequest {
    const tls = this.tls;
    return (tls ? requestTls : requestPlain)({ ...this.where, ...tls, ...options }, answered);
  }

  /** An agent for requests to it (with `where`), carrying the TLS options an https:// one needs. */
  agent(options: AgentOptions): Agent {
    const tls = this.tls;
    return tls ? new TlsAgent({ ...options, ...tls }) : new Agent(options);
  }
}
