// A host on TCP admits only its proxies (docs/design.md §12): --host-allow (php-fpm's
// listen.allowed_clients) and mutual TLS, tested with the host and its clients on different addresses of
// the loopback network (127.0.0.2 for the host, 127.0.0.1 and 127.0.0.3 for clients).
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { request as requestTls } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { makeAuthority, signedCertificate, type CertificateFiles } from '../../tools/certificate.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, ROOT, startProcess, startProxy, type Running, type Sandbox } from '../helpers/stack.ts';

const HOST_ADDRESS = '127.0.0.2';

function extqs(args: string[]) {
  return spawnSync(process.execPath, ['bin/extqs.js', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
}

/** The host's own answer to a client of `localAddress`, over TLS with `identity` (or none); rejects when refused. */
function askOverTls(url: string, ca: string, identity: CertificateFiles | undefined, localAddress: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = requestTls(
      {
        host: hostname,
        port,
        path: '/ping',
        agent: false,
        localAddress,
        ca: readFileSync(ca),
        ...(identity && { cert: readFileSync(identity.cert), key: readFileSync(identity.key) }),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('a host on TCP admits only its proxies', function () {
  let sandbox: Sandbox;
  let host: Running | undefined;
  let proxy: Running | undefined;
  const hostLog = () => readLog(sandbox, 'host.log');

  beforeEach(function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => ({ hello: 'world' });\n`);
  });

  afterEach(async function () {
    await proxy?.stop();
    await host?.stop();
    proxy = host = undefined;
    sandbox.remove();
  });

  const startHost = (args: string[]) =>
    startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--workers', '1', '--host-listen', HOST_ADDRESS, ...args]);

  describe('with --host-allow', function () {
    it('serves a proxy inside a subnet on the list and closes a connection from elsewhere with one host.log line', async function () {
      // A proxy connecting to 127.0.0.2 comes from 127.0.0.1: inside the subnet, not its first address.
      // 127.0.0.3 is just outside it.
      host = await startHost(['--host-allow', '127.0.0.0/31']);
      proxy = await startProxy(sandbox, ['--upstream', host.url, '--proxy-workers', '1']);
      const admitted = await get(proxy.url, '/External/Hello');
      expect(admitted.status).to.equal(200);
      expect(JSON.parse(admitted.body)).to.deep.equal({ hello: 'world' });

      const refused = await get(host.url, '/ping', { localAddress: '127.0.0.3' }).then(
        () => 'answered',
        (err: NodeJS.ErrnoException) => err.code,
      );
      expect(refused).to.equal('ECONNRESET');
      const line = await eventually(() => hostLog().find((l) => l.includes('Refused a connection from 127.0.0.3')), 3000, 'the refusal');
      expect(line).to.match(/\[error\] \[req -\] Refused a connection from 127\.0\.0\.3: not in --host-allow$/);
      // A marker: the proxy's next request is logged by nobody, so wait for a line written after the refusal.
      expect((await get(proxy.url, '/External/Hello')).status).to.equal(200);
      expect(hostLog().filter((l) => l.includes('Refused'))).to.have.length(1);
    });

    it('refuses the proxy itself when it is not on the list: 503 to the client', async function () {
      host = await startHost(['--host-allow', '127.0.0.3/32,10.0.0.0/8']);
      proxy = await startProxy(sandbox, ['--upstream', host.url, '--proxy-workers', '1']);
      expect((await get(proxy.url, '/External/Hello')).status).to.be.oneOf([500, 502, 503]);
      await eventually(
        () => hostLog().find((l) => l.includes('Refused a connection from 127.0.0.1: not in --host-allow')),
        3000,
        'the refusal',
      );
    });
  });

  describe('with mutual TLS', function () {
    let authority: CertificateFiles;
    let hostIdentity: CertificateFiles;
    let proxyIdentity: CertificateFiles;
    let strangers: CertificateFiles;
    let strangerIdentity: CertificateFiles;

    beforeEach(function () {
      authority = makeAuthority(sandbox.dir, 'extqs-ca');
      hostIdentity = signedCertificate(sandbox.dir, 'host', authority, `IP:${HOST_ADDRESS}`);
      proxyIdentity = signedCertificate(sandbox.dir, 'proxy', authority, 'DNS:proxy');
      strangers = makeAuthority(sandbox.dir, 'other-ca');
      strangerIdentity = signedCertificate(sandbox.dir, 'stranger', strangers, 'DNS:proxy');
    });

    const mtls = (identity: CertificateFiles, ca = authority.cert) => [
      '--mtls-ca',
      ca,
      '--mtls-cert',
      identity.cert,
      '--mtls-key',
      identity.key,
    ];

    for (const forwarder of FORWARDERS) {
      it(`serves a proxy with a certificate from the CA over https:// (${forwarder})`, async function () {
        host = await startHost(mtls(hostIdentity));
        expect(host.url).to.match(/^https:\/\/127\.0\.0\.2:\d+$/);
        proxy = await startProxy(sandbox, [
          '--upstream',
          host.url,
          '--forwarder',
          forwarder,
          '--proxy-workers',
          '1',
          ...mtls(proxyIdentity),
        ]);
        const reply = await get(proxy.url, '/External/Hello');
        expect(reply.status).to.equal(200);
        expect(JSON.parse(reply.body)).to.deep.equal({ hello: 'world' });
        // The host's certificate names its address, not the site: the name checked is the upstream's, not the client's Host.
        const named = await get(proxy.url, '/External/Hello', { headers: { host: 'www.example.com' } });
        expect(named.status, "a client's Host naming the site").to.equal(200);
      });
    }

    it('refuses a client without a certificate, and one whose certificate comes from another CA, one line each', async function () {
      host = await startHost(mtls(hostIdentity));
      expect(await askOverTls(host.url, authority.cert, proxyIdentity, '127.0.0.1')).to.equal(200);
      const withoutCertificate = await askOverTls(host.url, authority.cert, undefined, '127.0.0.3').then(
        String,
        (err: Error) => err.message,
      );
      expect(withoutCertificate).to.not.equal('200');
      await eventually(() => hostLog().find((l) => /Refused a TLS client 127\.0\.0\.3: \S/.test(l)), 3000, 'the refusal of no certificate');
      const stranger = await askOverTls(host.url, authority.cert, strangerIdentity, '127.0.0.4').then(String, (err: Error) => err.message);
      expect(stranger).to.not.equal('200');
      await eventually(
        () => hostLog().find((l) => /Refused a TLS client 127\.0\.0\.4: UNABLE_TO_VERIFY_LEAF_SIGNATURE$/.test(l)),
        3000,
        "the refusal of another CA's certificate",
      );
      expect(hostLog().filter((l) => l.includes('Refused'))).to.have.length(2);
    });

    it('makes the proxy refuse a host whose certificate is not from its CA', async function () {
      host = await startHost(mtls(hostIdentity));
      // The proxy trusts only the other CA: the host's certificate does not verify.
      proxy = await startProxy(sandbox, ['--upstream', host.url, '--proxy-workers', '1', ...mtls(strangerIdentity, strangers.cert)]);
      expect((await get(proxy.url, '/External/Hello')).status).to.be.oneOf([500, 502, 503]);
      expect(hostLog().filter((l) => l.includes('GET /External/Hello'))).to.deep.equal([]);
    });

    it('makes the proxy refuse a host whose certificate is from its CA but for another name', async function () {
      const elsewhere = signedCertificate(sandbox.dir, 'elsewhere', authority, 'DNS:elsewhere.example,IP:127.0.0.9');
      host = await startHost(mtls(elsewhere));
      proxy = await startProxy(sandbox, ['--upstream', host.url, '--proxy-workers', '1', ...mtls(proxyIdentity)]);
      expect((await get(proxy.url, '/External/Hello')).status).to.be.oneOf([500, 502, 503]);
      expect(hostLog().filter((l) => l.includes('GET /External/Hello'))).to.deep.equal([]);
      await eventually(
        () =>
          readLog(sandbox, 'error.log').find((l) =>
            l.includes("(ERR_TLS_CERT_ALTNAME_INVALID)Hostname/IP does not match certificate's altnames"),
          ),
        3000,
        'the name mismatch in error.log',
      );
    });
  });

  describe('a host on a network address with neither', function () {
    it('refuses to start, naming --host-allow and the mutual TLS settings', function () {
      const result = extqs(['host', '--www', sandbox.www, '--logs', sandbox.logs, '--host-listen', '0.0.0.0']);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain('--host-allow (EXTQS_HOST_ALLOW)');
      expect(result.stderr).to.contain('--mtls-cert');
      expect(result.stderr).to.contain('"0.0.0.0" is not a loopback address');
    });

    it('starts with either, and extqs check says which is in force', function () {
      // No controller to type-check: the summary is what this test reads.
      rmSync(join(sandbox.controllers, 'Hello.ts'));
      const allow = extqs([
        'check',
        '--www',
        sandbox.www,
        '--logs',
        sandbox.logs,
        '--host-listen',
        '0.0.0.0',
        '--host-allow',
        '10.0.0.0/8',
      ]);
      expect(allow.stdout).to.contain('extqs host listens on http://0.0.0.0:0, admitting clients in --host-allow 10.0.0.0/8');
      const authority = makeAuthority(sandbox.dir, 'ca');
      const identity = signedCertificate(sandbox.dir, 'host', authority, 'IP:10.0.0.5');
      const tls = extqs([
        'check',
        ...['--www', sandbox.www, '--logs', sandbox.logs, '--host-listen', '0.0.0.0'],
        ...['--mtls-ca', authority.cert, '--mtls-cert', identity.cert, '--mtls-key', identity.key],
      ]);
      expect(tls.stdout).to.contain(
        `extqs host listens on https://0.0.0.0:0, admitting mutual TLS (a client certificate from ${authority.cert})`,
      );
    });
  });
});
