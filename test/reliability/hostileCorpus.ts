// Hostile requests, byte for byte, each with where it comes from. HTTP clients normalise `../`, escapes
// and framing, so these are sent over a raw socket (test/reliability/hostile.test.ts).
//
// The fixture the test builds: www/public holds index.html, known.txt, docs/index.html, a `.git/config`
// and an `evil.example/dir/` directory; www/controllers holds Secret.ts (its source carries a marker,
// its answer does not) and Echo.ts (answers a fixed body); the sandbox holds a package.json two levels
// above www/public. Symbolic links lead out of both roots: www/public/p.txt -> /etc/passwd,
// www/public/etc-link -> /etc, www/public/up -> .. (www/, so up/controllers/Secret.ts is the source), and
// www/controllers/Outside.ts -> a controller outside www/ (its answer carries a marker); the stack runs with
// the default --follow-symlinks owner. A request aimed at a smuggled second request asks for a path
// containing SMUGGLED_PATH, which must never reach the access log.

export const SMUGGLED_PATH = '/smuggled-by-hostile-corpus';

export interface HostileCase {
  /** What the case tries. */
  name: string;
  /** The public suite, advisory or RFC section it comes from. */
  source: string;
  /** The bytes sent (latin1: one char, one byte). */
  raw: string;
  /** Acceptable statuses of the (first) answer. */
  expect: number[];
  /** The server may close without answering (a request framing it cannot trust). */
  mayClose?: boolean;
}

const HOST = 'Host: 127.0.0.1';

/** A request with the usual Host header, CRLF line ends. */
function request(method: string, target: string, headers: string[] = [], body = '', version = 'HTTP/1.1'): string {
  return `${method} ${target} ${version}\r\n${[HOST, ...headers].map((h) => `${h}\r\n`).join('')}\r\n${body}`;
}
const get = (target: string, headers: string[] = []) => request('GET', target, headers);

/** A complete second request hidden in the first one's body. */
const SMUGGLED = `GET ${SMUGGLED_PATH} HTTP/1.1\r\n${HOST}\r\n\r\n`;

const REFUSED = [400, 403, 404];
const BAD = [400];
const NOT_FOUND = [404];

const traversal: HostileCase[] = [
  {
    name: 'dot-dot past the root',
    source: "expressjs/serve-static test 'should 403 when traversing past root' (/users/../../todo.txt)",
    raw: get('/users/../../package.json'),
    expect: [400, 403],
  },
  {
    name: 'dot-dot to the controllers',
    source: 'pillarjs/send test/send.js (traversal with root)',
    raw: get('/../controllers/Secret.ts'),
    expect: [400, 403],
  },
  {
    name: 'dot-dot to /etc/passwd',
    source: 'OWASP path traversal; appweb test/security/traversal.es.tst',
    raw: get('/../../../../../../../../etc/passwd'),
    expect: [400, 403],
  },
  {
    name: 'dot-dot via the controller prefix',
    source: "paths to the controllers' source under www/",
    raw: get('/External/../../controllers/Secret.ts'),
    expect: [400, 403],
  },
  {
    name: 'encoded slash after dot-dot under the prefix',
    source: 'CVE-2021-41773 family',
    raw: get('/External/..%2fcontrollers/Secret.ts'),
    expect: [400, 403, 404, 500],
  },
  {
    name: 'encoded dot-dot under the prefix to the controller source',
    source: 'CVE-2021-41773 (/.%2e/)',
    raw: get('/External/.%2e/controllers/Secret.ts'),
    expect: REFUSED,
  },
  {
    name: 'encoded dot-dot-slash under the prefix',
    source: 'CVE-2021-41773',
    raw: get('/External/%2e%2e%2f%2e%2e%2fpackage.json'),
    expect: [400, 403, 404, 500],
  },
  {
    name: 'CVE-2021-41773 /.%2e/ to /etc/passwd',
    source: 'CVE-2021-41773 (Apache 2.4.49 path traversal)',
    raw: get('/.%2e/.%2e/.%2e/.%2e/.%2e/.%2e/etc/passwd'),
    expect: [400, 403],
  },
  {
    name: 'CVE-2021-41773 via cgi-bin',
    source: 'CVE-2021-41773 PoC /cgi-bin/.%2e/.%2e/.%2e/.%2e/etc/passwd',
    raw: get('/cgi-bin/.%2e/.%2e/.%2e/.%2e/.%2e/.%2e/etc/passwd'),
    expect: [400, 403],
  },
  {
    name: 'CVE-2021-41773 as a POST to cgi-bin/sh',
    source: 'CVE-2021-41773 RCE PoC (POST /cgi-bin/.%2e/.%2e/bin/sh)',
    raw: request('POST', '/cgi-bin/.%2e/.%2e/.%2e/.%2e/bin/sh', ['Content-Type: text/plain', 'Content-Length: 7'], 'echo;id'),
    expect: [400, 403, 405],
  },
  {
    name: 'CVE-2021-42013 %%32%65 double encoding',
    source: 'CVE-2021-42013 PoC /cgi-bin/.%%32%65/.%%32%65/etc/passwd',
    raw: get('/cgi-bin/.%%32%65/.%%32%65/.%%32%65/.%%32%65/.%%32%65/etc/passwd'),
    expect: [400, 403],
  },
  {
    name: 'CVE-2021-42013 %%32%65 under the controller prefix',
    source: 'CVE-2021-42013, aimed at the forwarded path',
    raw: get('/External/.%%32%65/controllers/Secret'),
    expect: BAD,
  },
  {
    name: 'CVE-2021-42013 .%2%65 (half-encoded escape)',
    source: 'CVE-2021-42013 PoC /cgi-bin/.%2%65/.%2%65/etc/passwd (Apache 2.4.50)',
    raw: get('/cgi-bin/.%2%65/.%2%65/.%2%65/.%2%65/etc/passwd'),
    expect: BAD,
  },
  {
    name: 'encoded digits that only look like an escape (.%32%65 is .2e)',
    source: 'CVE-2021-42013 write-ups (decoding once only)',
    raw: get('/.%32%65/.%32%65/package.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'double-encoded dot-dot %252e',
    source: 'CVE-2021-42013 write-ups (double URL encoding); OWASP',
    raw: get('/%252e%252e/%252e%252e/package.json'),
    expect: REFUSED,
  },
  {
    name: 'encoded slash between dot-dots',
    source: 'pillarjs/send UP_PATH_REGEXP after decoding',
    raw: get('/..%2f..%2fpackage.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'fully encoded ../../',
    source: 'OWASP path traversal cheat sheet',
    raw: get('/%2e%2e%2f%2e%2e%2fpackage.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'backslash dot-dot',
    source: 'appweb test/security/traversal.es.tst (Windows delimiter \\..\\)',
    raw: get('/..\\..\\package.json'),
    expect: [400, 403],
  },
  {
    name: 'encoded backslash dot-dot',
    source: 'appweb test/security/traversal.es.tst /..%5Cauth.conf',
    raw: get('/..%5c..%5cpackage.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'double-encoded backslash',
    source: 'IIS double-decoding (CVE-2001-0333) payload ..%255c',
    raw: get('/..%255c..%255cpackage.json'),
    expect: REFUSED,
  },
  {
    name: 'overlong UTF-8 dot %c0%ae',
    source: 'CVE-2008-2938 (Tomcat %c0%ae)',
    raw: get('/%c0%ae%c0%ae/%c0%ae%c0%ae/package.json'),
    expect: BAD,
  },
  {
    name: 'overlong UTF-8 dot under the controller prefix',
    source: "CVE-2008-2938 (Tomcat %c0%ae), aimed at the host's URL decoding (fastify FST_ERR_BAD_URL)",
    raw: get('/External/%c0%ae%c0%ae/x'),
    // No controller's name: the proxy takes it as a file path, whose escape does not decode (400).
    expect: BAD,
  },
  {
    name: 'overlong UTF-8 slash %c0%af',
    source: 'CVE-2000-0884 (IIS unicode traversal ..%c0%af..)',
    raw: get('/..%c0%af..%c0%afpackage.json'),
    expect: BAD,
  },
  {
    name: 'fullwidth full stop U+FF0E',
    source: 'unicode dot lookalikes; CVE-2021-41773 write-ups',
    raw: get('/%ef%bc%8e%ef%bc%8e/%ef%bc%8e%ef%bc%8e/package.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'one dot leader U+2024, raw UTF-8 bytes',
    source: 'unicode dot lookalikes',
    raw: get('/\xe2\x80\xa4\xe2\x80\xa4/package.json'),
    expect: [400, 404],
  },
  { name: 'NUL byte escape', source: "pillarjs/send test/send.js 'should 400 on NULL bytes'", raw: get('/some%00thing.txt'), expect: BAD },
  {
    name: 'NUL byte before an extension',
    source: 'classic NUL truncation (/index.html%00.txt)',
    raw: get('/known.txt%00.html'),
    expect: BAD,
  },
  {
    name: 'NUL byte in a traversal',
    source: 'OWASP path traversal (../../etc/passwd%00)',
    raw: get('/../../etc/passwd%00'),
    expect: [400, 403],
  },
  { name: 'malformed escape /%', source: "expressjs/serve-static test 'should 400 when URL malformed'", raw: get('/%'), expect: BAD },
  {
    name: 'invalid UTF-8 escape %99',
    source: "pillarjs/send test/send.js 'should treat a malformed URI as a bad request'",
    raw: get('/some%99thing.txt'),
    expect: BAD,
  },
  { name: 'truncated escape', source: 'pillarjs/send (decodeURIComponent failure) /%E0%A4%A', raw: get('/%E0%A4%A'), expect: BAD },
  { name: 'bad hex escape %zz', source: 'nginx-tests http_uri.t (invalid escapes)', raw: get('/%zz/known.txt'), expect: BAD },
  { name: 'merged slashes to /etc/passwd', source: 'nginx-tests http_uri.t (merge_slashes)', raw: get('//etc//passwd'), expect: NOT_FOUND },
  {
    name: 'dot segments that stay inside',
    source: 'nginx-tests http_uri.t (/./ and /../ inside the root)',
    raw: get('/docs/./../known.txt'),
    expect: [200],
  },
  {
    name: 'trailing dot-dot after a file',
    source: 'nginx-tests http_uri.t (/known.txt/..)',
    raw: get('/known.txt/..'),
    expect: [200, 301],
  },
  { name: 'dot-dot-dot segment', source: 'nginx-tests http_uri.t (/.../)', raw: get('/.../package.json'), expect: NOT_FOUND },
  { name: 'absolute file path', source: 'OWASP path traversal (absolute path)', raw: get('/etc/passwd'), expect: NOT_FOUND },
  {
    name: 'package.json under the public root',
    source: 'project files outside the public root (package.json)',
    raw: get('/package.json'),
    expect: NOT_FOUND,
  },
  {
    name: 'dotfile directory (.git/config)',
    source: "pillarjs/send test/send.js dotfiles 'ignore'",
    raw: get('/.git/config'),
    expect: NOT_FOUND,
  },
  { name: 'encoded dotfile (%2egit)', source: 'pillarjs/send dotfiles after decoding', raw: get('/%2egit/config'), expect: NOT_FOUND },
  {
    name: 'controller source by name under the prefix',
    source: 'controller source by file name under /External/',
    raw: get('/External/Secret.ts'),
    expect: [400, 404, 500],
  },
  {
    name: 'over-long segment (ENAMETOOLONG)',
    source: "pillarjs/send test/send.js 'should treat an ENAMETOOLONG as a 404'",
    raw: get(`/${'foobar'.repeat(99)}`),
    expect: NOT_FOUND,
  },
  {
    name: 'URL past Apache LimitRequestLine (8190)',
    source: "expressjs/serve-static 'should 404 when URL too long'; Apache LimitRequestLine",
    raw: get(`/${'foobar/'.repeat(1300)}`),
    expect: [414],
  },
  {
    name: 'URL past the header limit',
    source: 'nginx-tests (large_client_header_buffers, 414); RFC 9112 §3',
    raw: get(`/${'a'.repeat(20_000)}`),
    expect: [414, 431],
  },
];

const targets: HostileCase[] = [
  { name: 'absolute-form target', source: 'RFC 9112 §3.2.2 (absolute-form)', raw: get('http://127.0.0.1/known.txt'), expect: [200] },
  {
    name: 'absolute-form target naming another host',
    source: 'RFC 9112 §3.2.2; PortSwigger host header attacks',
    raw: get('http://evil.example/../../package.json'),
    expect: [400, 403, 404],
  },
  {
    name: 'absolute-form file: target',
    source: 'PortSwigger SSRF (file:// URL as the target)',
    raw: get('file:///etc/passwd'),
    expect: BAD,
  },
  { name: 'asterisk-form OPTIONS', source: 'RFC 9112 §3.2.4 (OPTIONS *)', raw: request('OPTIONS', '*'), expect: [200, 400, 405] },
  { name: 'asterisk-form GET', source: 'RFC 9112 §3.2.4 (asterisk-form only for OPTIONS)', raw: get('*'), expect: BAD },
  {
    name: 'CONNECT to an internal port',
    source: 'RFC 9110 §9.3.6 (CONNECT); open-proxy probes',
    raw: request('CONNECT', '127.0.0.1:22'),
    expect: [405],
  },
  {
    name: 'CRLF injection in the target, escaped',
    source: 'CWE-113 HTTP response splitting (%0d%0a in the path)',
    raw: get('/docs%0d%0aX-Injected:%20yes'),
    expect: [400, 404],
  },
  {
    name: 'CRLF injection via a directory redirect',
    source: 'CWE-113; pillarjs/send redirect Location',
    raw: get('/docs%0d%0aX-Injected:%20yes/..'),
    expect: [200, 400, 403, 404],
  },
  {
    name: 'protocol-relative redirect //evil.example/dir',
    source: "pillarjs/send 'should not redirect to protocol-relative locations'",
    raw: get('//evil.example/dir'),
    expect: [301],
  },
  {
    name: 'encoded protocol-relative redirect /%2fevil.example/dir',
    source: 'CVE-2015-1164 (serve-static open redirect)',
    raw: get('/%2fevil.example/dir'),
    expect: [301, 404],
  },
  {
    name: 'backslash protocol-relative redirect /\\evil.example/dir',
    source: 'open redirect via backslash (browsers read \\ as /)',
    raw: get('/\\evil.example/dir'),
    expect: [301, 404],
  },
  {
    name: 'CRLF injection in the query of a forwarded request',
    source: 'CWE-113 via the query string',
    raw: get('/External/Echo?x=%0d%0aX-Injected:%20yes'),
    expect: [200],
  },
  {
    name: 'raw CR LF in the target',
    source: 'CWE-113 (raw CRLF in the request line)',
    raw: `GET /docs\r\nX-Injected: yes HTTP/1.1\r\n${HOST}\r\n\r\n`,
    expect: [400, 505],
    mayClose: true,
  },
  {
    name: 'a forged X-Request-Id carrying a header',
    source: 'CWE-113 against the echoed X-Request-Id',
    raw: get('/known.txt', ['X-Request-Id: abc%0d%0aX-Injected:%20yes']),
    expect: [200],
  },
  {
    name: 'Set-Cookie and X-Injected request headers',
    source: 'header reflection probes',
    raw: get('/known.txt', ['X-Injected: yes', 'Set-Cookie: injected=1']),
    expect: [200],
  },
];

/** Links are refused as Apache refuses one it may not follow: 403 and AH00037 (a controller: a load failure). */
const links: HostileCase[] = [
  {
    name: 'a file linked to /etc/passwd',
    source: 'CWE-61 (UNIX symbolic link following); Apache Options SymLinksIfOwnerMatch, AH00037',
    raw: get('/p.txt'),
    expect: [403],
  },
  {
    name: 'a file under a directory linked to /etc',
    source: 'CWE-61; nginx disable_symlinks (every path component is checked)',
    raw: get('/etc-link/passwd'),
    expect: [403],
  },
  {
    name: 'the controller source under a directory linked to www/',
    source: 'CWE-61; Apache Options FollowSymLinks (a link up the tree)',
    raw: get('/up/controllers/Secret.ts'),
    expect: [403],
  },
  {
    name: 'the controller source through a linked directory, slashes encoded',
    source: 'CWE-61 with CVE-2021-41773-style encoding (%2f decoded by the file server)',
    raw: get('/up%2fcontrollers%2fSecret.ts'),
    expect: NOT_FOUND,
  },
  {
    name: 'a controller linked out of the tree',
    source: 'CWE-61; php-fpm security.limit_extensions / open_basedir (a script outside the tree must not run)',
    raw: get('/External/Outside'),
    expect: [500],
  },
];

const methods: HostileCase[] = [
  {
    name: 'lower-case method',
    source: 'RFC 9110 §9.1 (methods are case-sensitive); nginx-tests',
    raw: request('get', '/known.txt'),
    expect: [400, 405, 501],
  },
  { name: 'mixed-case method', source: 'RFC 9110 §9.1', raw: request('GeT', '/known.txt'), expect: [400, 405, 501] },
  {
    name: 'TRACE (cross-site tracing)',
    source: 'CVE-2004-2320 (XST); RFC 9110 §9.3.8',
    raw: request('TRACE', '/known.txt', ['X-Injected: yes']),
    expect: [405],
  },
  {
    name: 'OPTIONS on a file',
    source: "expressjs/serve-static 'should 405 when OPTIONS request'",
    raw: request('OPTIONS', '/known.txt'),
    expect: [405],
  },
  {
    name: 'PUT over a file',
    source: 'WebDAV/PUT upload probes; RFC 9110 §9.3.4',
    raw: request('PUT', '/known.txt', ['Content-Length: 5'], 'owned'),
    expect: [405],
  },
  { name: 'DELETE a file', source: 'RFC 9110 §9.3.5', raw: request('DELETE', '/known.txt'), expect: [405] },
  { name: 'PROPFIND', source: 'WebDAV probes (RFC 4918)', raw: request('PROPFIND', '/', ['Depth: 1']), expect: [405] },
  {
    name: 'PROPFIND to a controller',
    source: 'WebDAV probes (RFC 4918); a CGI script runs for any method',
    raw: request('PROPFIND', '/External/Echo', ['Depth: 1']),
    expect: [200],
  },
  {
    name: 'unknown method',
    source: 'RFC 9110 §9.1 (501 for unknown methods); llhttp',
    raw: request('FOO', '/known.txt'),
    expect: [400, 405, 501],
  },
];

const framing: HostileCase[] = [
  {
    name: 'CL.TE: Content-Length and Transfer-Encoding together',
    source: 'PortSwigger request smuggling CL.TE; RFC 9112 §6.3',
    raw: request('POST', '/External/Echo', ['Content-Length: 6', 'Transfer-Encoding: chunked'], `0\r\n\r\n${SMUGGLED}`),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'TE.CL: Transfer-Encoding then Content-Length',
    source: 'PortSwigger request smuggling TE.CL',
    raw: request(
      'POST',
      '/External/Echo',
      ['Transfer-Encoding: chunked', 'Content-Length: 4'],
      `5c\r\n${SMUGGLED.slice(0, 0x5c).padEnd(0x5c, 'x')}\r\n0\r\n\r\n`,
    ),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'two different Content-Lengths',
    source: 'RFC 9112 §6.3 (item 5); PortSwigger CL.CL',
    raw: request('POST', '/External/Echo', ['Content-Length: 0', 'Content-Length: 44'], SMUGGLED),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'two equal Content-Lengths',
    source: 'RFC 9110 §8.6 (duplicate Content-Length)',
    raw: request('POST', '/known.txt', ['Content-Length: 3', 'Content-Length: 3'], 'abc'),
    expect: [400, 405],
    mayClose: true,
  },
  {
    name: 'Content-Length list "3, 3"',
    source: 'RFC 9110 §8.6',
    raw: request('POST', '/known.txt', ['Content-Length: 3, 3'], 'abc'),
    expect: [400, 405],
    mayClose: true,
  },
  {
    name: 'negative Content-Length',
    source: 'RFC 9110 §8.6 (1*DIGIT)',
    raw: request('POST', '/External/Echo', ['Content-Length: -1']),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'Content-Length with a plus sign',
    source: 'RFC 9110 §8.6; smuggling via lenient number parsing',
    raw: request('POST', '/External/Echo', ['Content-Length: +44'], SMUGGLED),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'Transfer-Encoding: chunked, identity',
    source: 'RFC 9112 §6.3 (chunked not final); PortSwigger TE.TE obfuscation',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked, identity'], `0\r\n\r\n${SMUGGLED}`),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'Transfer-Encoding: xchunked',
    source: 'PortSwigger TE.TE obfuscation',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: xchunked'], `0\r\n\r\n${SMUGGLED}`),
    expect: [400, 501],
    mayClose: true,
  },
  {
    name: 'space before the colon of Transfer-Encoding',
    source: 'RFC 9112 §5.1 (no whitespace before the colon); PortSwigger',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding : chunked'], `0\r\n\r\n${SMUGGLED}`),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'Transfer-Encoding on HTTP/1.0',
    source: 'RFC 9112 §6.1 (TE in a 1.0 request is faulty framing)',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], `0\r\n\r\n${SMUGGLED}`, 'HTTP/1.0'),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'obs-fold continuation line',
    source: 'RFC 9112 §5.2 (obs-fold: reject or replace with SP)',
    raw: `GET /known.txt HTTP/1.1\r\n${HOST}\r\nX-Folded: a\r\n X-Injected: yes\r\n\r\n`,
    expect: [200, 400],
    mayClose: true,
  },
  {
    name: 'obs-fold hiding Transfer-Encoding',
    source: 'RFC 9112 §5.2; PortSwigger TE.TE (folded TE)',
    raw: request('POST', '/External/Echo', ['Content-Length: 44', 'X-Folded: a', ' Transfer-Encoding: chunked'], SMUGGLED),
    expect: [200, 400],
    mayClose: true,
  },
  {
    name: 'bare CR in the request line',
    source: 'RFC 9112 §2.2 (bare CR must be rejected)',
    raw: `GET /known.txt HTTP/1.1\r${HOST}\r\n\r\n`,
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'bare CR in a header value',
    source: 'RFC 9112 §2.2',
    raw: `GET /known.txt HTTP/1.1\r\n${HOST}\r\nX-A: a\rX-Injected: yes\r\n\r\n`,
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'bare LF line ends',
    source: 'RFC 9112 §2.2 (a recipient MAY accept bare LF); CVE-2024-27982',
    raw: `GET /known.txt HTTP/1.1\n${HOST}\n\n`,
    expect: [200, 400],
    mayClose: true,
  },
  {
    name: 'NUL in a header value',
    source: 'RFC 9110 §5.5 (NUL never allowed in field values)',
    raw: get('/known.txt', ['X-A: a\x00b']),
    expect: BAD,
    mayClose: true,
  },
  { name: 'header line without a colon', source: 'RFC 9112 §5', raw: get('/known.txt', ['NoColonHere']), expect: BAD, mayClose: true },
  {
    name: 'space inside a header name',
    source: 'RFC 9110 §5.1 (field-name is a token)',
    raw: get('/known.txt', ['X Injected: yes']),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'huge chunk size',
    source: 'CVE-2013-2028 (nginx chunk size overflow)',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], 'ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n'),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'invalid chunk extension with a bare LF',
    source: 'CVE-2024-27982 (Node chunk-extension smuggling)',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], `2;\nxx\r\n0\r\n\r\n${SMUGGLED}`),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'chunk size with trailing garbage',
    source: 'RFC 9112 §7.1 (chunk-size is 1*HEXDIG)',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], `2 x\r\nab\r\n0\r\n\r\n`),
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'chunk size line ended by LF alone',
    source: 'RFC 9112 §7.1 (chunk-size CRLF); CVE-2024-27982 family',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], '5\nhello\r\n0\r\n\r\n'),
    expect: BAD,
  },
  {
    name: 'chunk data ended by LF alone',
    source: 'RFC 9112 §7.1 (chunk-data CRLF); llhttp HPE_CR_EXPECTED',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], '5\r\nhello\n0\r\n\r\n'),
    expect: BAD,
  },
  {
    name: 'trailer carrying Content-Length',
    source: 'RFC 9110 §6.5.1 (framing fields never in a trailer); PortSwigger trailer smuggling',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked'], '5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n'),
    expect: BAD,
  },
  {
    name: 'chunked body carrying a smuggled request after 0',
    source: 'PortSwigger request smuggling (chunked terminator then a request)',
    raw: request('POST', '/External/Echo', ['Transfer-Encoding: chunked', 'Connection: close'], `0\r\n\r\n${SMUGGLED}`),
    expect: [200],
  },
  {
    name: 'HTTP/1.1 without Host',
    source: 'RFC 9112 §3.2 (400 for a 1.1 request without Host)',
    raw: 'GET /known.txt HTTP/1.1\r\n\r\n',
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'two Host headers',
    source: 'RFC 9112 §3.2 (400 for more than one Host)',
    raw: get('/known.txt', ['Host: evil.example']),
    expect: [200, 400],
    mayClose: true,
  },
  {
    name: 'HTTP/2.0 in an HTTP/1 request line',
    source: 'RFC 9112 §2.3; nginx-tests http_uri.t',
    raw: request('GET', '/known.txt', [], '', 'HTTP/2.0'),
    expect: [505],
  },
  {
    name: 'HTTP/0.9 simple request',
    source: 'RFC 1945 §4 (Simple-Request)',
    raw: 'GET /known.txt\r\n\r\n',
    expect: [400, 505],
    mayClose: true,
  },
  {
    name: 'extra token after the version',
    source: 'RFC 9112 §3 (request-line grammar)',
    raw: `GET /known.txt HTTP/1.1 extra\r\n${HOST}\r\n\r\n`,
    expect: BAD,
    mayClose: true,
  },
  {
    name: 'header block past the limit',
    source: 'RFC 6585 §5 (431); Apache LimitRequestFieldSize',
    raw: get('/known.txt', [`X-Big: ${'a'.repeat(20_000)}`]),
    expect: [400, 431],
    mayClose: true,
  },
  {
    name: 'a head just under the limit, to a controller',
    source: 'RFC 6585 §5; the fields the proxy adds must not push it past the host limit',
    // Two fields, each within Apache's LimitRequestFieldSize (8190), together just under --max-header-size.
    raw: get('/External/Echo', [`X-Big: ${'a'.repeat(8_150)}`, `X-Big-2: ${'a'.repeat(8_140)}`]),
    expect: [200],
  },
  {
    name: 'many small headers',
    source: 'Apache LimitRequestFields (100); Node maxHeadersCount',
    raw: get(
      '/known.txt',
      Array.from({ length: 1500 }, (_, i) => `X-${i}: v`),
    ),
    expect: [200, 400, 431],
    mayClose: true,
  },
  {
    name: 'Expect: 100-continue with no body',
    source: 'RFC 9110 §10.1.1',
    raw: request('POST', '/External/Echo', ['Expect: 100-continue', 'Content-Length: 0']),
    expect: [200],
  },
  {
    name: 'Upgrade to a websocket on a static path',
    source: 'h2c/websocket smuggling (Bishop Fox h2c smuggling)',
    raw: get('/known.txt', ['Connection: Upgrade', 'Upgrade: websocket']),
    expect: [200, 400, 426],
    mayClose: true,
  },
  {
    name: 'h2c upgrade on the forwarded path',
    source: 'Bishop Fox h2c smuggling (2020)',
    raw: get('/External/Echo', ['Connection: Upgrade, HTTP2-Settings', 'Upgrade: h2c', 'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA']),
    expect: [200, 400],
    mayClose: true,
  },
];

export const HOSTILE_CORPUS: readonly HostileCase[] = [...traversal, ...links, ...targets, ...methods, ...framing];
