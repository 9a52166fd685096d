// The header hygiene both forwarding engines share (proxy/forward/forwarding.ts), as pure functions.
import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { CONTROLLER_ANSWER_FIELD, CONTROLLER_FAILED_FIELD, ENDED_WITHOUT_HEADERS_FIELD } from '../../common/protocol.ts';
import { forwardedHeaders, hostAnswerOf, responseHeaders } from '../../proxy/forward/forwarding.ts';
import type { RequestContext } from '../../proxy/core/requestContext.ts';
import { contextFor } from '../helpers/requestContext.ts';

function requestWith(headers: Record<string, string>, id = 'id', remoteAddress = '::ffff:10.1.2.3'): RequestContext {
  return contextFor({ headers, socket: { remoteAddress } } as unknown as IncomingMessage, id);
}

describe('forwarding headers', () => {
  describe('to the host', () => {
    it('drops hop-by-hop fields, those Connection names, client X-Forwarded-*, Forwarded and X-Request-Id; sets its own', () => {
      const out = forwardedHeaders(
        requestWith(
          {
            host: 'svc.example',
            connection: 'keep-alive, X-Secret',
            'x-secret': '1',
            'keep-alive': 'timeout=1',
            te: 'trailers',
            trailer: 'cookie',
            upgrade: 'h2c',
            'x-forwarded-for': '6.6.6.6',
            'x-forwarded-host': 'evil.example',
            forwarded: 'for=6.6.6.6',
            'x-request-id': 'client-chosen',
            accept: 'application/json',
          },
          'id-1',
        ),
      );
      expect(out).to.deep.equal({
        host: 'svc.example',
        accept: 'application/json',
        'x-forwarded-for': '10.1.2.3',
        'x-forwarded-proto': 'http',
        'x-forwarded-host': 'svc.example',
        'x-request-id': 'id-1',
      });
    });

    it('leaves out what the engine frames itself', () => {
      const out = forwardedHeaders(requestWith({ host: 'h', 'transfer-encoding': 'chunked', expect: '100-continue' }), [
        'transfer-encoding',
        'expect',
      ]);
      expect(out).not.to.have.property('transfer-encoding');
      expect(out).not.to.have.property('expect');
    });
  });

  describe('to the client', () => {
    it("drops hop-by-hop fields and those the host's Connection names, keeps the rest in order", () => {
      const out = responseHeaders({
        'content-type': 'application/json',
        connection: 'keep-alive, X-Internal',
        'keep-alive': 'timeout=75',
        'x-internal': 'secret',
        'content-length': '2',
        'set-cookie': ['a=1', 'b=2'],
      });
      expect(out).to.deep.equal({ 'content-type': 'application/json', 'content-length': '2', 'set-cookie': ['a=1', 'b=2'] });
      expect(Object.keys(out)).to.deep.equal(['content-type', 'content-length', 'set-cookie']);
    });

    it('leaves out what Node frames itself, and does not touch the object it was given', () => {
      const given = { 'transfer-encoding': 'chunked', 'content-type': 'text/plain' };
      expect(responseHeaders(given, ['transfer-encoding'])).to.deep.equal({ 'content-type': 'text/plain' });
      expect(given).to.have.property('transfer-encoding');
    });
  });

  describe("the host's answer", () => {
    it('is relayed when it succeeds, or when a controller made its error status', () => {
      expect(hostAnswerOf(200, {})).to.equal('relay');
      expect(hostAnswerOf(304, {})).to.equal('relay');
      expect(hostAnswerOf(404, { [CONTROLLER_ANSWER_FIELD]: '1' })).to.equal('relay');
      expect(hostAnswerOf(500, { [CONTROLLER_ANSWER_FIELD]: '1' })).to.equal('relay');
    });

    it("is the proxy's to answer when the host made an error status itself, or ended without headers", () => {
      for (const status of [400, 404, 408, 431, 500, 503]) expect(hostAnswerOf(status, {}), String(status)).to.equal('host-error');
      expect(hostAnswerOf(500, { [ENDED_WITHOUT_HEADERS_FIELD]: '1' })).to.equal('ended-without-headers');
      expect(hostAnswerOf(500, { [CONTROLLER_FAILED_FIELD]: '1' })).to.equal('controller-failed');
    });

    it('never passes the marks on to a client', () => {
      expect(
        responseHeaders({ [CONTROLLER_ANSWER_FIELD]: '1', [CONTROLLER_FAILED_FIELD]: '1', 'content-type': 'text/plain' }),
      ).to.deep.equal({
        'content-type': 'text/plain',
      });
    });
  });
});
