// The request path's passes (proxy/passes/), each run on a request context without a listening server: a
// request and response made over a socket that is never connected, the error.log lines kept by contextFor().
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import type { ClientLimits } from '../../proxy/core/clientLimits.ts';
import { bodyLimitsPass } from '../../proxy/passes/bodyLimits.ts';
import { framingPass } from '../../proxy/passes/framing.ts';
import { httpsRedirectPass } from '../../proxy/passes/httpsRedirect.ts';
import { routePass } from '../../proxy/passes/routeTarget.ts';
import { contextFor } from '../helpers/requestContext.ts';

const LIMITS: ClientLimits = {
  headerTimeout: 20,
  requestTimeout: 60,
  keepAliveTimeout: 5,
  maxHeaderSize: 8190,
  maxHeaderFields: 4,
  limitRequestFieldSize: 20,
  maxConnections: 0,
  limitRequestBody: 100,
  h2MaxConcurrentStreams: 100,
};

/** A request as node:http's parser hands it over, and its response, on an unconnected socket. */
function requestOf(url: string, headers: Record<string, string>, version = '1.1') {
  const req = new IncomingMessage(new Socket());
  req.url = url;
  req.method = 'GET';
  req.httpVersion = version;
  [req.httpVersionMajor, req.httpVersionMinor] = version.split('.').map(Number);
  req.rawHeaders = Object.entries(headers).flat();
  req.headers = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const res = new ServerResponse(req);
  return contextFor(req, 'req-1', res);
}

/** The head as Node rendered it (writeHead with fields keeps them only there, not for getHeader). */
const headOf = (res: ServerResponse): string => (res as unknown as { _header: string | null })._header ?? '';

describe('the request passes, without a listener', () => {
  describe('framing', () => {
    const framing = framingPass(LIMITS);

    it('lets a well-formed request through and writes nothing', () => {
      const ctx = requestOf('/favicon.ico', { Host: 'h' });
      expect(framing(ctx)).to.equal(false);
      expect(ctx.lines).to.deep.equal([]);
      expect(ctx.res.headersSent).to.equal(false);
    });

    it('answers an HTTP/1.1 request without Host 400, with its line and the connection closing', () => {
      const ctx = requestOf('/x', {});
      expect(framing(ctx)).to.equal(true);
      expect(ctx.res.statusCode).to.equal(400);
      expect(ctx.res.shouldKeepAlive).to.equal(false);
      expect(ctx.lines).to.deep.equal([
        {
          module: 'core',
          level: 'info',
          status: undefined,
          client: ctx.client,
          message: 'AH00569: client sent HTTP/1.1 request without hostname (see RFC7230 section 5.4): /x',
          referer: undefined,
          requestId: 'req-1',
        },
      ]);
    });

    it('answers a version other than 1.x 505, and more fields than --max-header-fields 400', () => {
      const version = requestOf('/x', { Host: 'h' }, '2.0');
      expect(framing(version)).to.equal(true);
      expect(version.res.statusCode).to.equal(505);
      const fields = requestOf('/x', { Host: 'h', A: '1', B: '2', C: '3', D: '4' });
      expect(framing(fields)).to.equal(true);
      expect(fields.res.statusCode).to.equal(400);
      expect(fields.lines[0].message).to.contain("exceeds this server's limit (4)");
    });

    it('answers a field line past --limit-request-field-size 400 with AH00561 naming it, and lets one at the limit through', () => {
      // `X-Long: ` and 12 bytes: 20, the limit.
      expect(framing(requestOf('/x', { Host: 'h', 'X-Long': 'a'.repeat(12) }))).to.equal(false);
      const over = requestOf('/x', { Host: 'h', 'X-Long': 'a'.repeat(13) });
      expect(framing(over)).to.equal(true);
      expect(over.res.statusCode).to.equal(400);
      expect(over.res.shouldKeepAlive).to.equal(false);
      expect(over.lines.map((l) => [l.module, l.level, l.message])).to.deep.equal([
        ['core', 'info', 'AH00561: Request header exceeds LimitRequestFieldSize: X-Long'],
      ]);
    });
  });

  describe('bodyLimits', () => {
    it('answers a declared length past --limit-request-body 413 with AH01588, and lets one at the limit through', () => {
      const pass = bodyLimitsPass(LIMITS);
      const over = requestOf('/External/Up', { Host: 'h', 'Content-Length': '101' });
      expect(pass(over)).to.equal(true);
      expect(over.res.statusCode).to.equal(413);
      expect(over.lines[0].message).to.equal('AH01588: Requested content-length of 101 is larger than the configured limit of 100');
      expect(pass(requestOf('/External/Up', { Host: 'h', 'Content-Length': '100' }))).to.equal(false);
    });
  });

  describe('httpsRedirect', () => {
    it('sends a plain request to the same target on the HTTPS port, but leaves ACME challenges and a disabled redirect alone', () => {
      let enabled = true;
      const pass = httpsRedirectPass({ enabled: () => enabled, tlsPort: () => 8443 });
      const ctx = requestOf('/a?b=1', { Host: 'svc.example:8080' });
      expect(pass(ctx)).to.equal(true);
      expect(ctx.res.statusCode).to.equal(301);
      expect(headOf(ctx.res)).to.contain('\r\nLocation: https://svc.example:8443/a?b=1\r\n');
      expect(pass(requestOf('/.well-known/acme-challenge/t', { Host: 'h' }))).to.equal(false);
      enabled = false;
      expect(pass(requestOf('/a', { Host: 'h' }))).to.equal(false);
    });

    it('does not echo a Host that is no host name into Location', () => {
      const ctx = requestOf('/', { Host: 'evil.example/x@y' });
      httpsRedirectPass({ enabled: () => true, tlsPort: () => 443 })(ctx);
      expect(headOf(ctx.res)).to.match(/\r\nLocation: https:\/\/\/\r\n/);
    });
  });

  describe('route', () => {
    it('keeps the route on the context for the passes after it', () => {
      const ctx = requestOf('/External/Latest?sn=1', { Host: 'h' });
      expect(routePass(ctx)).to.equal(false);
      expect(ctx.route).to.deep.equal({ kind: 'forward', path: '/External/Latest', url: '/External/Latest?sn=1' });
    });

    it('answers an encoded slash 404 with AH00026, and a path above the root 400 with AH10244 at level error', () => {
      const slash = requestOf('/a%2fb', { Host: 'h' });
      expect(routePass(slash)).to.equal(true);
      expect(slash.res.statusCode).to.equal(404);
      expect(slash.lines[0].message).to.equal("AH00026: found %2f (encoded '/') in URI path (/a%2fb), returning 404");
      const above = requestOf('/../etc/passwd', { Host: 'h' });
      expect(routePass(above)).to.equal(true);
      expect(above.res.statusCode).to.equal(400);
      expect(above.lines[0]).to.include({ level: 'error', message: 'AH10244: invalid URI path (/../etc/passwd)' });
    });
  });
});
