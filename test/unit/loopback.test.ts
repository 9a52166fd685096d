// Who sees `extqs dev`'s error page: the proxy decides from the client's socket address alone
// (proxy/forward/loopback.ts, proxy/forward/forwarding.ts), never from a field the client sent.
import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { LOCAL_CLIENT_FIELD } from '../../common/protocol.ts';
import { forwardedHeaders } from '../../proxy/forward/forwarding.ts';
import { isLoopback } from '../../proxy/forward/loopback.ts';
import { contextFor } from '../helpers/requestContext.ts';

describe('isLoopback', () => {
  for (const address of [
    '127.0.0.1',
    '127.255.255.254',
    '127.1.2.3',
    '::1',
    '0:0:0:0:0:0:0:1',
    '::0001',
    '::ffff:127.0.0.1',
    '::FFFF:127.9.9.9',
  ]) {
    it(`is true for ${address}`, () => expect(isLoopback(address)).to.equal(true));
  }
  for (const address of [
    '10.0.0.1',
    '128.0.0.1',
    '126.255.255.255',
    '0.0.0.0',
    '::',
    '::2',
    'fe80::1',
    '::ffff:10.0.0.1',
    '::ffff:128.0.0.1',
    '2001:db8::1',
    '127.0.0.1.evil.example',
    'localhost',
    '',
    undefined,
  ]) {
    it(`is false for ${JSON.stringify(address)}`, () => expect(isLoopback(address)).to.equal(false));
  }
});

describe('the local-client mark the proxy sends the host', () => {
  const request = (remoteAddress: string, headers: Record<string, string> = {}) =>
    ({ headers: { host: 'h', ...headers }, socket: { remoteAddress } }) as unknown as IncomingMessage;
  const forged = { 'x-forwarded-for': '127.0.0.1', forwarded: 'for=127.0.0.1', [LOCAL_CLIENT_FIELD]: '1' };

  it('is set under extqs dev for a client on loopback, IPv4, IPv6 or mapped', () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect(forwardedHeaders(contextFor(request(address)), [], true)[LOCAL_CLIENT_FIELD], address).to.equal('1');
    }
  });

  it('is never set for a remote client, whatever X-Forwarded-For or the mark it sends', () => {
    for (const address of ['10.1.2.3', '::ffff:10.1.2.3', '2001:db8::7']) {
      const out = forwardedHeaders(contextFor(request(address, forged)), [], true);
      expect(out, address).not.to.have.property(LOCAL_CLIENT_FIELD);
      expect(out['x-forwarded-for']).to.equal(address.replace('::ffff:', ''));
    }
  });

  it('is never set outside extqs dev, and a client-sent one is dropped', () => {
    expect(forwardedHeaders(contextFor(request('127.0.0.1', forged)))).not.to.have.property(LOCAL_CLIENT_FIELD);
    expect(forwardedHeaders(contextFor(request('127.0.0.1', forged)), [], false)).not.to.have.property(LOCAL_CLIENT_FIELD);
  });
});
