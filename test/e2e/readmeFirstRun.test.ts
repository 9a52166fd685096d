// What README.md tells a newcomer a first run shows (its "Run it" list and "What a newcomer sees" table) is what
// a first run shows: each quote below must stand in the README as written and match a line of the real stack's
// logs after the README's three requests. Editing either side without the other fails here.
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import { FLUSH_WINDOW } from '../../common/lineLog.ts';
import { get } from '../helpers/http.ts';
import { makeSandbox, readLog, ROOT, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

type LogFile = 'error.log' | 'host.log';

/** A README quote, the log it describes, and the line it stands for (`www` is the served directory). */
interface Quote {
  readme: string;
  log: LogFile;
  line: (www: string) => RegExp;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const QUOTES: readonly Quote[] = [
  {
    readme: '`[mpm_event:notice] … configured -- resuming normal operations`',
    log: 'error.log',
    line: () => /^\[[^\]]+\] \[mpm_event:notice\] \[pid \d+\] extqs proxy \d+ configured -- resuming normal operations /,
  },
  { readme: '`settings: …`', log: 'error.log', line: () => /\[mpm_event:info\] \[pid \d+\] settings: --port / },
  { readme: '`Worker N ready`', log: 'host.log', line: () => /\[info\] \[req -\] Worker \d+ ready$/ },
  {
    readme: '`Host pool … serving …/www/controllers on unix:/tmp/extqs-run-PID-XXXXXX/host.sock with N workers`',
    log: 'host.log',
    line: (www) =>
      new RegExp(
        `\\] Host pool \\d+ serving ${escape(www)}/controllers on unix:${escape(tmpdir())}/extqs-run-\\d+-\\w{6}/host\\.sock with \\d+ workers$`,
      ),
  },
  { readme: '`Settings: …`', log: 'host.log', line: () => /\[info\] \[req -\] Settings: --www / },
  {
    readme: '`Failed opening controller script …/www/controllers/Latest.ts: No such file or directory`',
    log: 'host.log',
    line: (www) => new RegExp(`\\] Failed opening controller script ${escape(www)}/controllers/Latest\\.ts: No such file or directory`),
  },
  {
    readme: '`[fcgid:warn] … mod_fcgid: stderr: PHP Fatal error:  Failed opening controller script …`',
    log: 'error.log',
    line: () => /\[fcgid:warn\] .* mod_fcgid: stderr: PHP Fatal error: {2}Failed opening controller script /,
  },
  {
    readme: '`End of script output before headers: /External/Latest`',
    log: 'error.log',
    line: () => /\[core:error\] .* End of script output before headers: \/External\/Latest, request_id: /,
  },
  {
    readme: '`(OS 2)The system cannot find the file specified.  : [client …] AH00128: File does not exist: …/www/public/favicon.ico`',
    log: 'error.log',
    line: (www) =>
      new RegExp(
        `\\(OS 2\\)The system cannot find the file specified\\. {2}: \\[client [^\\]]+\\] AH00128: File does not exist: ${escape(www)}/public/favicon\\.ico`,
      ),
  },
];

describe("the README's first run", function () {
  const readme = readFileSync(`${ROOT}/README.md`, 'utf8');
  let sandbox: Sandbox;
  let stack: Running | undefined;
  const statuses: number[] = [];

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox);
    // The README's three requests, in its order.
    for (const path of ['/External/Latest?sn=123&no=1', '/External/Alarm?all_alarm&all', '/favicon.ico']) {
      statuses.push((await get(stack.url, path)).status);
    }
    // Logs are read after a stop, when every line is on disk.
    expect(await stack.stop()).to.equal(0);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('answers the three observed requests 500, 500 and 404, as its table says', function () {
    expect(readme).to.include('| `GET /External/Alarm?all_alarm&all` | the same, for `Alarm` |');
    expect(readme).to.include("| `GET /favicon.ico` | `404 Not Found`, Apache's page |");
    expect(statuses).to.deep.equal([500, 500, 404]);
  });

  it("warns, under its `tail`, that the last request's lines may not be there yet", function () {
    const example = readme.slice(readme.indexOf('tail logs/access.log'));
    expect(example.slice(0, 400)).to.include(`Lines reach the files in windows of ${FLUSH_WINDOW.ms} ms`);
  });

  it('shows as Latest.ts the file its `cp examples/controllers/*` installs, as docs/controllers.md does', function () {
    const installed = readFileSync(`${ROOT}/examples/controllers/Latest.ts`, 'utf8');
    for (const doc of ['README.md', 'docs/controllers.md']) {
      const text = readFileSync(`${ROOT}/${doc}`, 'utf8');
      expect(text, doc).to.include('cp examples/controllers/* www/controllers/');
      expect(text, `${doc} shows another Latest.ts than examples/controllers/Latest.ts`).to.include(`\`\`\`ts\n${installed}\`\`\`\n`);
    }
  });

  for (const quote of QUOTES) {
    it(`writes to ${quote.log} the line the README quotes as ${quote.readme}`, function () {
      expect(readme, 'README.md no longer says this; update the quote with the text').to.include(quote.readme);
      const pattern = quote.line(sandbox.www);
      expect(
        readLog(sandbox, quote.log).some((line) => pattern.test(line)),
        `${quote.log} has no line like ${pattern}`,
      ).to.equal(true);
    });
  }
});
