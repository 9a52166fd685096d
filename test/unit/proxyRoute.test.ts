import { expect } from 'chai';
import { CONTROLLER_PREFIX } from '../../common/protocol.ts';
import { normalizePath, routeRequest } from '../../proxy/core/routeDecision.ts';

describe('normalizePath', () => {
  describe('a path without dot segments', () => {
    it('returns it unchanged', () => {
      expect(normalizePath('/External/Latest')).to.equal('/External/Latest');
    });

    it('leaves names that merely contain dots alone', () => {
      expect(normalizePath('/.hidden/a..b/.../c.')).to.equal('/.hidden/a..b/.../c.');
    });

    it('leaves escapes of reserved characters alone (%2f stays, the handler decides)', () => {
      expect(normalizePath('/a/%2f/b%3F')).to.equal('/a/%2f/b%3F');
    });
  });

  describe('a path with escaped unreserved characters or repeated slashes (as Apache 2.4 maps it)', () => {
    it('decodes %2e, so /a/%2e%2e/b is /b (CVE-2021-41773)', () => {
      expect(normalizePath('/a/%2e%2e/b')).to.equal('/b');
      expect(normalizePath('/a/.%2E/b')).to.equal('/b');
    });

    it('decodes unreserved letters (%41 is A) but not %25', () => {
      expect(normalizePath('/%41b%7e%25')).to.equal('/Ab~%25');
    });

    it('merges repeated slashes (//External//Latest is /External/Latest)', () => {
      expect(normalizePath('//External//Latest')).to.equal('/External/Latest');
    });
  });

  describe('a path with dot segments (RFC 3986 §5.2.4)', () => {
    it('removes a . segment (/a/./b is /a/b)', () => {
      expect(normalizePath('/a/./b')).to.equal('/a/b');
    });

    it('removes a .. segment with its parent (/External/../favicon.ico)', () => {
      expect(normalizePath('/External/../favicon.ico')).to.equal('/favicon.ico');
    });

    it('refuses to climb above the root (/.. is undefined)', () => {
      expect(normalizePath('/..')).to.equal(undefined);
      expect(normalizePath('/%2e%2e/etc/passwd')).to.equal(undefined);
    });

    it('keeps the trailing slash when the path ends in .. (/a/b/.. is /a/)', () => {
      expect(normalizePath('/a/b/..')).to.equal('/a/');
    });

    it('keeps the trailing slash when the path ends in . (/a/b/. is /a/b/)', () => {
      expect(normalizePath('/a/b/.')).to.equal('/a/b/');
    });

    it('resolves the RFC example /a/b/c/./../../g to /a/g', () => {
      expect(normalizePath('/a/b/c/./../../g')).to.equal('/a/g');
    });

    it('refuses many .. that climb past the root (/a/../../../b)', () => {
      expect(normalizePath('/a/../../../b')).to.equal(undefined);
    });

    it('merges slashes before removing dot segments (/a//../b is /b)', () => {
      expect(normalizePath('/a//../b')).to.equal('/b');
    });

    it('reduces /./ to /', () => {
      expect(normalizePath('/./')).to.equal('/');
    });
  });
});

describe('routeRequest', () => {
  it('uses /External/ as the forward prefix', () => {
    expect(CONTROLLER_PREFIX).to.equal('/External/');
  });

  describe('a target under /External/', () => {
    it('forwards /External/Latest?x with the url unchanged', () => {
      expect(routeRequest('/External/Latest?x')).to.deep.equal({
        kind: 'forward',
        url: '/External/Latest?x',
        path: '/External/Latest',
      });
    });

    it('forwards a target without a query with the url unchanged', () => {
      expect(routeRequest('/External/Latest')).to.deep.equal({
        kind: 'forward',
        url: '/External/Latest',
        path: '/External/Latest',
      });
    });

    it('keeps the query on a forward after normalisation (/x/../External/A?q=1)', () => {
      expect(routeRequest('/x/../External/A?q=1')).to.deep.equal({
        kind: 'forward',
        url: '/External/A?q=1',
        path: '/External/A',
      });
    });

    it('does not normalise dot segments inside the query', () => {
      expect(routeRequest('/External/./A?p=/x/../y')).to.deep.equal({
        kind: 'forward',
        url: '/External/A?p=/x/../y',
        path: '/External/A',
      });
    });

    it('forwards a normalised target without a query without adding ?', () => {
      expect(routeRequest('/a/../External/B')).to.deep.equal({
        kind: 'forward',
        url: '/External/B',
        path: '/External/B',
      });
    });
  });

  describe('a target outside /External/', () => {
    it('serves /favicon.ico as static', () => {
      expect(routeRequest('/favicon.ico')).to.deep.equal({ kind: 'static', path: '/favicon.ico' });
    });

    it('serves /External/../favicon.ico as the static /favicon.ico', () => {
      expect(routeRequest('/External/../favicon.ico')).to.deep.equal({ kind: 'static', path: '/favicon.ico' });
    });

    it('serves /a/./b as the static /a/b', () => {
      expect(routeRequest('/a/./b')).to.deep.equal({ kind: 'static', path: '/a/b' });
    });

    it('serves /a/b/.. as the static /a/', () => {
      expect(routeRequest('/a/b/..')).to.deep.equal({ kind: 'static', path: '/a/' });
    });

    it('serves /Externalx as static (the prefix needs its slash)', () => {
      expect(routeRequest('/Externalx')).to.deep.equal({ kind: 'static', path: '/Externalx' });
    });

    it('serves /External without a trailing slash as static', () => {
      expect(routeRequest('/External')).to.deep.equal({ kind: 'static', path: '/External' });
    });

    it('drops the query from a static path', () => {
      expect(routeRequest('/index.html?v=2')).to.deep.equal({ kind: 'static', path: '/index.html' });
    });

    it('treats the prefix case-sensitively (/external/A is static)', () => {
      expect(routeRequest('/external/A')).to.deep.equal({ kind: 'static', path: '/external/A' });
    });
  });

  describe('a target that is not origin-form', () => {
    it('accepts the absolute form http://x/y as /y (RFC 9112 §3.2.2: a server MUST)', () => {
      expect(routeRequest('http://x/y')).to.deep.equal({ kind: 'static', path: '/y' });
      expect(routeRequest('HTTPS://x:8080/External/A?q=1')).to.deep.equal({ kind: 'forward', path: '/External/A', url: '/External/A?q=1' });
      expect(routeRequest('http://x?q=1')).to.deep.equal({ kind: 'static', path: '/' });
    });

    it('rejects other schemes (file:///etc/passwd) as a bad request', () => {
      expect(routeRequest('file:///etc/passwd')).to.deep.equal({ kind: 'bad-request', status: 400 });
    });

    it('rejects a malformed escape in the path, so nothing is decoded twice (CVE-2021-42013 .%%32%65, .%2%65)', () => {
      expect(routeRequest('/cgi-bin/.%%32%65/.%%32%65/etc/passwd')).to.deep.equal({ kind: 'bad-request', status: 400 });
      expect(routeRequest('/External/.%2%65/x')).to.deep.equal({ kind: 'bad-request', status: 400 });
      expect(routeRequest('/%')).to.deep.equal({ kind: 'bad-request', status: 400 });
      expect(routeRequest('/a?q=%zz')).to.deep.equal({ kind: 'static', path: '/a' }); // the query is the controller's business
    });

    it('answers a target past 8190 bytes with 414 (Apache LimitRequestLine)', () => {
      expect(routeRequest(`/${'a'.repeat(8190)}`)).to.deep.equal({ kind: 'bad-request', status: 414 });
      expect(routeRequest(`/${'a'.repeat(8189)}`)).to.deep.equal({ kind: 'static', path: `/${'a'.repeat(8189)}` });
    });

    it('rejects the asterisk form * as a bad request', () => {
      expect(routeRequest('*')).to.deep.equal({ kind: 'bad-request', status: 400 });
    });

    it('rejects the empty target as a bad request', () => {
      expect(routeRequest('')).to.deep.equal({ kind: 'bad-request', status: 400 });
    });

    it('rejects a path that climbs above the root as a bad request (/.., /External/../../x)', () => {
      expect(routeRequest('/..')).to.deep.equal({ kind: 'bad-request', status: 400, aboveRoot: true });
      expect(routeRequest('/External/../../x')).to.deep.equal({ kind: 'bad-request', status: 400, aboveRoot: true });
    });

    it('refuses %2f and %5c in a static path (AH00026)', () => {
      for (const target of ['/plain%2fa.txt', '/a%2Fb', '/x%5cy', '/..%2fx', '/External%2fLatest']) {
        expect(routeRequest(target), target).to.deep.equal({ kind: 'encoded-slash' });
      }
    });

    it('refuses %2f, %5c and %00 under the controller prefix (AH00026), in the name or after it', () => {
      for (const target of [
        '/External/Echo%2fx',
        '/External/..%2f..%2fpublic%2findex',
        '/External/Latest%00',
        '/External/a%5Cb?x=1',
        '/External/Latest/a%2Fb',
      ]) {
        expect(routeRequest(target), target).to.deep.equal({ kind: 'encoded-slash' });
      }
    });

    it('takes a name no controller can have as a file path, never forwarding it', () => {
      for (const [target, path] of [
        ['/External/a.b', '/External/a.b'],
        ['/External/9lives?x=1', '/External/9lives'],
        ['/External/.hidden', '/External/.hidden'],
        ['/External/', '/External/'],
        ['/External/%c0%ae%c0%ae/x', '/External/%c0%ae%c0%ae/x'],
        ['/External/Caf%C3%A9', '/External/Caf%C3%A9'],
      ]) {
        expect(routeRequest(target), target).to.deep.equal({ kind: 'static', path });
      }
      expect(routeRequest('/External/%4Catest/x').kind).to.equal('forward');
    });

    it('forwards //External//Latest as /External/Latest', () => {
      expect(routeRequest('//External//Latest?a=1')).to.deep.equal({
        kind: 'forward',
        path: '/External/Latest',
        url: '/External/Latest?a=1',
      });
    });

    it('serves /External/%2e%2e/favicon.ico as the static /favicon.ico', () => {
      expect(routeRequest('/External/%2e%2e/favicon.ico')).to.deep.equal({ kind: 'static', path: '/favicon.ico' });
    });

    it('answers /server-status itself, with its query, however the path is spelled', () => {
      expect(routeRequest('/server-status?auto')).to.deep.equal({ kind: 'status', query: 'auto' });
      expect(routeRequest('/x/../server-status')).to.deep.equal({ kind: 'status', query: '' });
      expect(routeRequest('/server-status/')).to.deep.equal({ kind: 'static', path: '/server-status/' });
    });

    it('answers /metrics itself, whatever its query, however the path is spelled', () => {
      expect(routeRequest('/metrics')).to.deep.equal({ kind: 'metrics' });
      expect(routeRequest('/metrics?name[]=up')).to.deep.equal({ kind: 'metrics' });
      expect(routeRequest('/%6detrics')).to.deep.equal({ kind: 'metrics' });
      expect(routeRequest('/External/../metrics')).to.deep.equal({ kind: 'metrics' });
      expect(routeRequest('/metrics/')).to.deep.equal({ kind: 'static', path: '/metrics/' });
    });

    it('rejects a relative path as a bad request', () => {
      expect(routeRequest('External/Latest')).to.deep.equal({ kind: 'bad-request', status: 400 });
    });

    it("answers Prometheus's probe paths itself: /-/healthy is live, /-/ready is ready", () => {
      expect(routeRequest('/-/healthy')).to.deep.equal({ kind: 'probe', probe: 'live' });
      expect(routeRequest('/-/ready?x')).to.deep.equal({ kind: 'probe', probe: 'ready' });
      expect(routeRequest('/-/other')).to.deep.equal({ kind: 'static', path: '/-/other' });
      // An inherited property of a plain object is no probe.
      expect(routeRequest('/constructor')).to.deep.equal({ kind: 'static', path: '/constructor' });
    });

    it('reads an authority only at the start: a URL in the query is no absolute form', () => {
      expect(routeRequest('/External/Latest?u=http://a.example/b')).to.deep.equal({
        kind: 'forward',
        path: '/External/Latest',
        url: '/External/Latest?u=http://a.example/b',
      });
    });
  });
});
