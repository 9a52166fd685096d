import { expect } from 'chai';
import {
  accessJson,
  accessLogTime,
  combinedLine,
  errorJson,
  errorLine,
  errorLogTime,
  escapeLogValue,
  hostJson,
  hostLine,
  hostLogTime,
  nowMicros,
  type AccessEntry,
  compileAccessFormat,
  COMBINED_FORMAT,
} from '../../common/logFormat.ts';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const two = (n: number): string => String(n).padStart(2, '0');

// 2026-11-22T01:42:10.919Z, plus 811 µs.
const FIXED_MS = Date.UTC(2026, 10, 22, 1, 42, 10, 919);
const FIXED_MICROS = FIXED_MS * 1000 + 811;
const fixed = new Date(FIXED_MS);

const ACCESS_TIME = /^\d{2}\/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}$/;
const ERROR_TIME = /^(Sun|Mon|Tue|Wed|Thu|Fri|Sat) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{2} \d{2}:\d{2}:\d{2}\.\d{6} \d{4}$/;

/** Reads a CLF time back into epoch milliseconds, offset included. */
function parseAccessTime(text: string): number {
  const m = /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/.exec(text);
  if (!m) throw new Error(`not a CLF time: ${text}`);
  const month = two(MONTHS.indexOf(m[2]) + 1);
  return Date.parse(`${m[3]}-${month}-${m[1]}T${m[4]}:${m[5]}:${m[6]}${m[7]}${m[8]}:${m[9]}`);
}

function baseEntry(): AccessEntry {
  return {
    remoteAddress: '203.0.113.9',
    time: fixed,
    method: 'GET',
    url: '/External/Latest?sn=1&no=',
    httpVersion: '1.1',
    status: 200,
    bytes: 1234,
    referer: 'http://example.com/page',
    userAgent: 'curl/8.5.0',
  };
}

describe('log time formats', () => {
  describe('accessLogTime', () => {
    it('has the Common Log Format shape dd/Mon/yyyy:hh:mm:ss +hhmm', () => {
      expect(accessLogTime(fixed)).to.match(ACCESS_TIME);
    });

    it('gives the local date and time of the Date', () => {
      const expected =
        `${two(fixed.getDate())}/${MONTHS[fixed.getMonth()]}/${fixed.getFullYear()}:` +
        `${two(fixed.getHours())}:${two(fixed.getMinutes())}:${two(fixed.getSeconds())}`;
      expect(accessLogTime(fixed).slice(0, 20)).to.equal(expected);
    });

    it('carries an offset that makes the time read back to the same instant (whole seconds)', () => {
      expect(parseAccessTime(accessLogTime(fixed))).to.equal(FIXED_MS - 919);
    });

    it('pads a single-digit day and time with zeros', () => {
      const early = new Date(2026, 0, 5, 3, 4, 5);
      expect(accessLogTime(early).slice(0, 20)).to.equal('05/Jan/2026:03:04:05');
    });
  });

  describe('errorLogTime', () => {
    it('has Apache 2.4’s %{u}t shape with microseconds', () => {
      expect(errorLogTime(FIXED_MICROS)).to.match(ERROR_TIME);
    });

    it('gives the local time of the instant and the exact microseconds', () => {
      const expected =
        `${DAYS[fixed.getDay()]} ${MONTHS[fixed.getMonth()]} ${two(fixed.getDate())} ` +
        `${two(fixed.getHours())}:${two(fixed.getMinutes())}:${two(fixed.getSeconds())}.919811 ${fixed.getFullYear()}`;
      expect(errorLogTime(FIXED_MICROS)).to.equal(expected);
    });

    it('pads small microsecond values to six digits', () => {
      const micros = Date.UTC(2026, 0, 1, 12, 0, 0, 0) * 1000 + 7;
      expect(errorLogTime(micros)).to.match(/\.000007 2026$/);
    });

    it('is computed from a local-time pad of day and time (Jan 5 03:04:05)', () => {
      const local = new Date(2026, 0, 5, 3, 4, 5, 6);
      expect(errorLogTime(local.getTime() * 1000)).to.equal(`${DAYS[local.getDay()]} Jan 05 03:04:05.006000 2026`);
    });
  });

  describe('hostLogTime', () => {
    it('gives UTC with milliseconds: 22-Nov-2026 01:42:10.919 UTC', () => {
      expect(hostLogTime(fixed)).to.equal('22-Nov-2026 01:42:10.919 UTC');
    });

    it('pads single-digit fields and milliseconds', () => {
      expect(hostLogTime(new Date(Date.UTC(2026, 0, 5, 3, 4, 5, 6)))).to.equal('05-Jan-2026 03:04:05.006 UTC');
    });
  });

  describe('nowMicros', () => {
    it('is the wall clock in microseconds', () => {
      const before = Date.now();
      const micros = nowMicros();
      const after = Date.now();
      expect(Number.isInteger(micros)).to.equal(true);
      expect(micros).to.be.within((before - 5) * 1000, (after + 5) * 1000);
    });
  });
});

describe('escapeLogValue', () => {
  describe('a value that needs nothing', () => {
    it('returns printable ASCII unchanged', () => {
      expect(escapeLogValue('GET /External/Latest?a=1&b[]=2 HTTP/1.1')).to.equal('GET /External/Latest?a=1&b[]=2 HTTP/1.1');
    });

    it('returns the empty string unchanged', () => {
      expect(escapeLogValue('')).to.equal('');
    });
  });

  describe('a value with characters to escape', () => {
    it('puts a backslash before a double quote', () => {
      expect(escapeLogValue('a"b')).to.equal('a\\"b');
    });

    it('doubles a backslash', () => {
      expect(escapeLogValue('a\\b')).to.equal('a\\\\b');
    });

    it('writes other control characters as \\xhh', () => {
      expect(escapeLogValue('a\x01b\x1b[31m')).to.equal('a\\x01b\\x1b[31m');
    });

    it('writes DEL as \\x7f', () => {
      expect(escapeLogValue('\x7f')).to.equal('\\x7f');
    });

    it('writes NUL as \\x00', () => {
      expect(escapeLogValue('a\0')).to.equal('a\\x00');
    });

    it('writes non-ASCII bytes (as Node reads them from the wire) as \\xhh', () => {
      // "é" sent as UTF-8 reaches Node as the two latin1 characters C3 A9.
      expect(escapeLogValue('caf\u00c3\u00a9')).to.equal('caf\\xc3\\xa9');
    });
  });
});

describe('combinedLine', () => {
  describe('a complete entry', () => {
    it('gives Apache’s combined format exactly', () => {
      expect(combinedLine(baseEntry())).to.equal(
        `203.0.113.9 - - [${accessLogTime(fixed)}] "GET /External/Latest?sn=1&no= HTTP/1.1" 200 1234 ` +
          '"http://example.com/page" "curl/8.5.0"',
      );
    });
  });

  describe('missing parts', () => {
    it('writes - for 0 bytes', () => {
      const line = combinedLine({ ...baseEntry(), status: 304, bytes: 0 });
      expect(line).to.equal(
        `203.0.113.9 - - [${accessLogTime(fixed)}] "GET /External/Latest?sn=1&no= HTTP/1.1" 304 - ` +
          '"http://example.com/page" "curl/8.5.0"',
      );
    });

    it('writes "-" for a missing referer and user agent', () => {
      const line = combinedLine({ ...baseEntry(), referer: undefined, userAgent: undefined });
      expect(line).to.equal(`203.0.113.9 - - [${accessLogTime(fixed)}] "GET /External/Latest?sn=1&no= HTTP/1.1" 200 1234 "-" "-"`);
    });
  });

  describe('client-supplied text', () => {
    it('escapes a quote in the URL so the request field cannot be closed early', () => {
      const line = combinedLine({ ...baseEntry(), url: '/x" 200 1 "forged' });
      expect(line).to.include('"GET /x\\" 200 1 \\"forged HTTP/1.1" 200 1234');
    });

    it('escapes a quote and a control character in the user agent', () => {
      const line = combinedLine({ ...baseEntry(), userAgent: 'evil"\x01' });
      expect(line.endsWith('"http://example.com/page" "evil\\"\\x01"')).to.equal(true);
    });

    it('escapes the referer too', () => {
      const line = combinedLine({ ...baseEntry(), referer: 'a\\b' });
      expect(line).to.include(' "a\\\\b" ');
    });
  });
});

describe('errorLine', () => {
  describe('with every field', () => {
    it('gives [time] [module:level] [pid] status: [client] message, request_id', () => {
      expect(
        errorLine(
          {
            module: 'core',
            level: 'info',
            status: '(OS 2)The system cannot find the file specified.',
            client: '1.2.3.4:5',
            message: 'msg',
            requestId: 'abc',
          },
          FIXED_MICROS,
          7,
        ),
      ).to.equal(
        `[${errorLogTime(FIXED_MICROS)}] [core:info] [pid 7] (OS 2)The system cannot find the file specified.: ` +
          '[client 1.2.3.4:5] msg, request_id: abc',
      );
    });
  });

  describe('with optional fields missing', () => {
    it('leaves out status, client and request id', () => {
      expect(errorLine({ module: 'proxy', level: 'error', message: 'upstream gone' }, FIXED_MICROS, 1)).to.equal(
        `[${errorLogTime(FIXED_MICROS)}] [proxy:error] [pid 1] upstream gone`,
      );
    });

    it('writes the client without a status', () => {
      expect(errorLine({ module: 'proxy', level: 'warn', client: '::1:5000', message: 'm' }, FIXED_MICROS, 2)).to.equal(
        `[${errorLogTime(FIXED_MICROS)}] [proxy:warn] [pid 2] [client ::1:5000] m`,
      );
    });
  });

  describe('with control characters', () => {
    it('escapes them in the message and in the request id', () => {
      const line = errorLine(
        {
          module: 'core',
          level: 'error',
          message: 'bad\x01name',
          requestId: 'id\x1b',
        },
        FIXED_MICROS,
        3,
      );
      expect(line).to.equal(`[${errorLogTime(FIXED_MICROS)}] [core:error] [pid 3] bad\\x01name, request_id: id\\x1b`);
    });
  });

  describe('with a referer', () => {
    it("appends it after the message as Apache's log.c does, escaped, before the request id", () => {
      const line = errorLine(
        { module: 'core', level: 'info', client: '1.2.3.4:5', message: 'm', referer: 'http://ref.example/p?q=1\n[forged', requestId: 'r' },
        FIXED_MICROS,
        4,
      );
      expect(line).to.equal(
        `[${errorLogTime(FIXED_MICROS)}] [core:info] [pid 4] [client 1.2.3.4:5] m, referer: http://ref.example/p?q=1\\n[forged, request_id: r`,
      );
    });
  });
});

describe('hostLine', () => {
  describe('a single-line message', () => {
    it('gives [time] [level] [req id] message', () => {
      expect(hostLine({ time: fixed, level: 'info', requestId: 'r-1', message: 'loaded Latest' })).to.equal(
        '[22-Nov-2026 01:42:10.919 UTC] [info] [req r-1] loaded Latest',
      );
    });

    it('writes - for a missing request id', () => {
      expect(hostLine({ time: fixed, level: 'warn', message: 'slow' })).to.equal('[22-Nov-2026 01:42:10.919 UTC] [warn] [req -] slow');
    });

    it('escapes a request id with control characters', () => {
      expect(hostLine({ time: fixed, level: 'info', requestId: 'a\x01b', message: 'x' })).to.equal(
        '[22-Nov-2026 01:42:10.919 UTC] [info] [req a\\x01b] x',
      );
    });
  });

  describe('a multi-line message', () => {
    it('indents every continuation line by four spaces, for \\n and \\r\\n alike', () => {
      const line = hostLine({
        time: fixed,
        level: 'error',
        requestId: 'r-2',
        message: 'Error: boom\n    at f (Latest.ts:1:1)\r\n    at g (Latest.ts:2:2)',
      });
      expect(line).to.equal(
        '[22-Nov-2026 01:42:10.919 UTC] [error] [req r-2] Error: boom\n' +
          '        at f (Latest.ts:1:1)\n' +
          '        at g (Latest.ts:2:2)',
      );
    });

    it('never starts a continuation line with [', () => {
      const line = hostLine({ time: fixed, level: 'error', message: 'a\n[forged] line\n[another]' });
      const lines = line.split('\n');
      expect(lines).to.have.length(3);
      for (const continuation of lines.slice(1)) expect(continuation.startsWith('    [')).to.equal(true);
    });
  });
});

describe('JSON log layouts (--log-format json)', () => {
  const access: AccessEntry = {
    remoteAddress: '203.0.113.9',
    time: fixed,
    method: 'GET',
    url: '/External/Latest?sn=1&no=',
    httpVersion: '1.1',
    status: 500,
    bytes: 507,
    referer: undefined,
    userAgent: 'curl/8.0',
    requestId: 'abc-123',
  };

  it('writes an access line as one object with the documented fields, in order', () => {
    const line = accessJson(access);
    expect(line).to.not.contain('\n');
    expect(JSON.parse(line)).to.deep.equal({
      time: '2026-11-22T01:42:10.919Z',
      client: '203.0.113.9',
      method: 'GET',
      url: '/External/Latest?sn=1&no=',
      protocol: 'HTTP/1.1',
      status: 500,
      bytes: 507,
      referer: null,
      user_agent: 'curl/8.0',
      request_id: 'abc-123',
    });
    expect(Object.keys(JSON.parse(line))).to.deep.equal([
      'time',
      'client',
      'method',
      'url',
      'protocol',
      'status',
      'bytes',
      'referer',
      'user_agent',
      'request_id',
    ]);
  });

  it('keeps a hostile client value inside its field: no second line, no forged field', () => {
    const line = accessJson({ ...access, userAgent: 'x"\n{"status":200}\r\u0000', referer: '\\"' });
    expect(line.split('\n')).to.have.length(1);
    const parsed = JSON.parse(line);
    expect(parsed.user_agent).to.equal('x"\n{"status":200}\r\u0000');
    expect(parsed.referer).to.equal('\\"');
    expect(parsed.status).to.equal(500);
  });

  it('writes an error line with level, module, pid and the time in microseconds', () => {
    const line = errorJson(
      {
        module: 'core',
        level: 'info',
        status: '(OS 2)The system cannot find the file specified.',
        client: '203.0.113.9:5123',
        message: 'AH00128: File does not exist: /w/public/favicon.ico',
        referer: 'http://ref.example/',
        requestId: 'r1',
      },
      FIXED_MICROS,
      4242,
    );
    expect(JSON.parse(line)).to.deep.equal({
      time: '2026-11-22T01:42:10.919811Z',
      level: 'info',
      module: 'core',
      pid: 4242,
      client: '203.0.113.9:5123',
      status: '(OS 2)The system cannot find the file specified.',
      message: 'AH00128: File does not exist: /w/public/favicon.ico',
      referer: 'http://ref.example/',
      request_id: 'r1',
    });
  });

  it('gives every error field even when the event has no value for it', () => {
    expect(JSON.parse(errorJson({ module: 'mpm_event', level: 'notice', message: 'ready' }, FIXED_MS * 1000 + 5, 1))).to.deep.equal({
      time: '2026-11-22T01:42:10.919005Z',
      level: 'notice',
      module: 'mpm_event',
      pid: 1,
      client: null,
      status: null,
      message: 'ready',
      referer: null,
      request_id: null,
    });
  });

  it("writes a host line with the worker's pid, and a stack inside the message", () => {
    const line = hostJson({ time: fixed, level: 'error', requestId: 'r2', message: 'Error: boom\n    at Latest.ts:3:9', pid: 77 }, 10);
    expect(line.split('\n')).to.have.length(1);
    expect(JSON.parse(line)).to.deep.equal({
      time: '2026-11-22T01:42:10.919Z',
      level: 'error',
      pid: 77,
      request_id: 'r2',
      message: 'Error: boom\n    at Latest.ts:3:9',
    });
    expect(JSON.parse(hostJson({ time: fixed, level: 'info', message: 'ready' }, 10))).to.include({ pid: 10, request_id: null });
  });
});

describe('compileAccessFormat (an Apache LogFormat string)', () => {
  const base: AccessEntry = {
    remoteAddress: '203.0.113.9',
    time: new Date(2026, 10, 22, 2, 1, 41),
    method: 'GET',
    url: '/External/Hello?name=a%20b',
    httpVersion: '1.1',
    status: 200,
    bytes: 1234,
    referer: 'http://client.example/page',
    userAgent: 'curl/8.5.0',
  };
  const withHeaders = (entry: AccessEntry): AccessEntry => ({
    ...entry,
    headers: { referer: entry.referer, 'user-agent': entry.userAgent },
  });
  const entries: Record<string, AccessEntry> = {
    'an ordinary request': base,
    'no body, no referer, no user agent': { ...base, bytes: 0, referer: undefined, userAgent: undefined },
    'hostile values (quotes, backslash, control and non-ASCII bytes)': {
      ...base,
      url: '/a"b\\c\x01\xe9',
      referer: 'x" "forged',
      userAgent: 'ua\n\tline\x7f',
    },
    'a refused request (its line as it came)': {
      ...base,
      method: '-',
      url: '-',
      httpVersion: '-',
      status: 400,
      requestLine: 'GET /\x00 HTTP/9',
    },
    'a refused request with no line': { ...base, status: 408, requestLine: '' },
    'an IPv6 client and HTTP/2': { ...base, remoteAddress: '2001:db8::1', httpVersion: '2.0', status: 304 },
  };

  for (const [name, entry] of Object.entries(entries)) {
    it(`writes combined's exact bytes from the combined string: ${name}`, () => {
      expect(compileAccessFormat(COMBINED_FORMAT)(withHeaders(entry))).to.equal(combinedLine(entry));
    });
  }

  it('writes %D (microseconds) and %T (whole seconds), a header by name, and %%', () => {
    const line = compileAccessFormat('%h %>s %D %T %{X-Forwarded-For}i %{Missing}i 100%% %m %U %q %H %B')({
      ...base,
      durationMicros: 2_345_000,
      headers: { 'x-forwarded-for': '198.51.100.1' },
    });
    expect(line).to.equal('203.0.113.9 200 2345000 2 198.51.100.1 - 100% GET /External/Hello ?name=a%20b HTTP/1.1 1234');
  });

  it('writes %X as the connection status: X aborted, + kept alive, - closed or unknown', () => {
    const format = compileAccessFormat('%>s %X');
    expect(format({ ...base, connectionStatus: 'X' })).to.equal('200 X');
    expect(format({ ...base, connectionStatus: '+' })).to.equal('200 +');
    expect(format({ ...base, connectionStatus: '-' })).to.equal('200 -');
    expect(format({ ...base })).to.equal('200 -');
  });

  it('refuses an unknown directive, naming it and those it knows', () => {
    expect(() => compileAccessFormat('%h %Z')).to.throw(/^%Z is not one of %h .*%D %T .*%\{Name\}i %%$/);
    expect(() => compileAccessFormat('%h %{X}o')).to.throw(/^%\{X\}o is not one of/);
    expect(() => compileAccessFormat('%h %')).to.throw(/^% is not one of/);
  });
});
