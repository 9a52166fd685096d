// How every client reaches a host (common/hostTarget.ts), against real servers on port 0 and a unix socket: plain,
// and mutual TLS with certificates made as an operator makes them (tools/certificate.ts). The name checked in the
// host's certificate is always the upstream's, whatever Host field the request carries.
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import { HostTarget, readClientTls, type ClientTls } from '../../common/hostTarget.ts';
import { makeAuthority, signedCertificate, type CertificateFiles } from '../../tools/certificate.ts';

/** Each request's answer: which connection carried it, and what the host saw of its client. */
function answerWho(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as Partial<TLSSocket> & Socket;
  const peer = socket.getPeerCertificate?.();
  res.end(
    JSON.stringify({
      port: socket.remotePort ?? null,
      client: peer?.subject?.CN ?? null,
      servername: socket.servername || null,
      host: req.headers.host,
    }),
  );
}

/** The answer's body, parsed, or the request's error code. */
function ask(target: HostTarget, options: Parameters<HostTarget['request']>[0] = {}): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const req = target.request({ path: '/who', ...options }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(JSON.parse(body) as Record<string, unknown>));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code }));
    req.end();
  });
}

/** Whether connect() gets a usable connection, or the error code it fails with. */
function connectOutcome(target: HostTarget): Promise<string> {
  return new Promise((resolve) => {
    const socket = target.connect(() => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('reaching a host (common/hostTarget.ts)', function () {
  let dir: string;
  let server: Server | undefined;

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-reach-'))));
  afterEach(async () => {
    const serving = server;
    server = undefined;
    serving?.closeAllConnections();
    if (serving) await new Promise((resolve) => serving.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('on a unix socket', function () {
    let target: HostTarget;
    beforeEach(async () => {
      const path = join(dir, 'host.sock');
      server = createServer(answerWho).listen(path);
      await once(server, 'listening');
      target = new HostTarget({ kind: 'unix', path });
    });

    it('is named and addressed by its path', () => {
      expect(target.address).to.equal(`unix:${join(dir, 'host.sock')}`);
      expect(target.where).to.deep.equal({ socketPath: join(dir, 'host.sock') });
      expect(target.tls).to.equal(undefined);
    });

    it('connects, answers a request, and keeps a connection alive through its agent', async () => {
      expect(await connectOutcome(target)).to.equal('connected');
      expect(await ask(target, { headers: { host: 'localhost' } })).to.include({ host: 'localhost', client: null });
      const agent = target.agent({ keepAlive: true });
      await ask(target, { agent });
      await ask(target, { agent });
      expect(Object.values(agent.freeSockets).flat(), 'one connection, kept').to.have.length(1);
      agent.destroy();
    });
  });

  describe('on TCP', function () {
    it('connects and answers a request at its host and port', async () => {
      const serving = (server = createServer(answerWho).listen(0, '127.0.0.1'));
      await once(serving, 'listening');
      const { port } = serving.address() as AddressInfo;
      const target = new HostTarget({ kind: 'tcp', host: '127.0.0.1', port });
      expect(target.where).to.deep.equal({ host: '127.0.0.1', port, protocol: 'http:' });
      expect(await connectOutcome(target)).to.equal('connected');
      expect(await ask(target)).to.include({ host: `127.0.0.1:${port}` });
    });
  });

  describe('over mutual TLS', function () {
    let authority: CertificateFiles;
    let clientTls: ClientTls;
    let port: number;

    /** A host that asks for a client certificate from `authority`, showing its own for `names`. */
    async function tlsHost(names: string): Promise<void> {
      const identity = signedCertificate(dir, 'host', authority, names);
      const serving = (server = createTlsServer(
        {
          cert: readFileSync(identity.cert),
          key: readFileSync(identity.key),
          ca: readFileSync(authority.cert),
          requestCert: true,
          rejectUnauthorized: true,
        },
        answerWho,
      ).listen(0, '127.0.0.1'));
      await once(serving, 'listening');
      port = (serving.address() as AddressInfo).port;
    }

    beforeEach(() => {
      authority = makeAuthority(dir, 'authority');
      const proxy = signedCertificate(dir, 'proxy', authority, 'DNS:proxy.example');
      clientTls = readClientTls({ mtlsCa: authority.cert, mtlsCert: proxy.cert, mtlsKey: proxy.key })!;
    });

    it('shows its certificate to a host whose certificate names its address, however it connects', async () => {
      await tlsHost('IP:127.0.0.1');
      const target = new HostTarget({ kind: 'tcp', host: '127.0.0.1', port, tls: true }, clientTls);
      expect(target.where).to.deep.equal({ host: '127.0.0.1', port, protocol: 'https:' });
      expect(await connectOutcome(target)).to.equal('connected');
      expect(await ask(target), 'no server name for an address').to.include({ client: 'proxy', servername: null });
      const agent = target.agent({ keepAlive: true });
      // A forwarded request carries its client's Host: the name checked is still the upstream's.
      const first = await ask(target, { agent, headers: { host: 'www.example.com' } });
      expect(first).to.include({ client: 'proxy', servername: null, host: 'www.example.com' });
      expect(await ask(target, { agent }), 'the same connection').to.include({ port: first.port });
      agent.destroy();
    });

    it("sends the upstream's name and checks it in a host's certificate", async () => {
      await tlsHost('DNS:localhost');
      const target = new HostTarget({ kind: 'tcp', host: 'localhost', port, tls: true }, clientTls);
      expect(await ask(target, { headers: { host: 'www.example.com' } })).to.include({ client: 'proxy', servername: 'localhost' });
      const agent = target.agent({ keepAlive: true });
      expect(await ask(target, { agent, headers: { host: 'www.example.com' } })).to.include({ servername: 'localhost' });
      agent.destroy();
    });

    it('refuses a host whose certificate is for another name, whatever the Host field says', async () => {
      await tlsHost('DNS:elsewhere.example,IP:127.0.0.9');
      const target = new HostTarget({ kind: 'tcp', host: '127.0.0.1', port, tls: true }, clientTls);
      expect(await connectOutcome(target)).to.equal('ERR_TLS_CERT_ALTNAME_INVALID');
      expect(await ask(target)).to.deep.equal({ error: 'ERR_TLS_CERT_ALTNAME_INVALID' });
      const agent = target.agent({ keepAlive: true });
      expect(await ask(target, { agent, headers: { host: 'elsewhere.example' } })).to.deep.equal({ error: 'ERR_TLS_CERT_ALTNAME_INVALID' });
      agent.destroy();
    });

    it('refuses a host whose certificate is not from its CA', async () => {
      await tlsHost('IP:127.0.0.1');
      const stranger = makeAuthority(dir, 'stranger');
      const own = signedCertificate(dir, 'own', stranger, 'DNS:proxy.example');
      const strangerTls = readClientTls({ mtlsCa: stranger.cert, mtlsCert: own.cert, mtlsKey: own.key })!;
      const target = new HostTarget({ kind: 'tcp', host: '127.0.0.1', port, tls: true }, strangerTls);
      expect(await connectOutcome(target)).to.be.oneOf(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN']);
    });
  });

  describe('an https:// host without a mutual TLS pair', function () {
    it('is made, and names the missing settings at the first use', () => {
      const target = new HostTarget({ kind: 'tcp', host: '10.0.0.9', port: 9443, tls: true });
      const missing = '10.0.0.9: an https:// upstream without --mtls-cert, --mtls-key and --mtls-ca';
      expect(() => target.tls).to.throw(missing);
      expect(() => target.connect(() => undefined)).to.throw(missing);
      expect(() => target.request({})).to.throw(missing);
      expect(() => target.agent({})).to.throw(missing);
    });

    it('is read as no pair when any of the three files is not given', () => {
      expect(readClientTls({ mtlsCa: 'ca.crt', mtlsCert: 'proxy.crt', mtlsKey: undefined })).to.equal(undefined);
    });
  });
});
