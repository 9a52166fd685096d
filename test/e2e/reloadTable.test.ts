// Every setting of the settings table through a SIGHUP, as an operator does it: the --config file changed,
// SIGHUP sent to the launcher, at --proxy-workers 1 and 2. Each reload line must say what happened: a
// setting it says is applied is in effect (a log format, a page, a header, a certificate, or at least the
// running settings line the process writes after the reload), one it says new workers apply is in effect once
// they answer (at --proxy-workers 2; at 1 the same settings need a restart), one it says needs a restart is not
// (the old value still in effect, and in the settings line). One stack per group of settings, SIGHUPs in sequence,
// each adding its change to the file.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { once } from 'node:events';
import { connect as connectTls } from 'node:tls';
import { join } from 'node:path';
import { expect } from 'chai';
import { SETTING_KEYS, specOf, type SettingKey } from '../../common/settings.ts';
import { makeCertificate, type CertificateFiles } from '../../tools/certificate.ts';
import { accepts, freePort } from '../../tools/ports.ts';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import {
  descendants,
  eventually,
  holdController,
  makeSandbox,
  readLog,
  roleOf,
  spawnReady,
  startProcess,
  startProxy,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

/** What the line must say of a setting, and so what must have happened. */
type Said = 'applied' | 'replaced' | 'restart' | 'not taken' | 'not read';

interface Stage {
  sandbox: Sandbox;
  stack: Running;
  proxyWorkers: number;
  pair: CertificateFiles;
  renewed: CertificateFiles;
  /** A port nothing listens on: the HTTPS port of the group started without a certificate. */
  idlePort: number;
  /** The proxy workers running when the step's SIGHUP was sent. */
  workersAtSighup: number[];
}

interface Step {
  /** The file's new lines, by setting (undefined removes the setting's line). */
  set: (stage: Stage) => Partial<Record<SettingKey, string | undefined>>;
  /** What the line says at this many proxy workers. */
  said: Said | ((proxyWorkers: number) => Said);
  /** What shows the new value in effect (applied) or the old one still in effect (restart). */
  observe?: (stage: Stage) => unknown;
  /** The value the processes run with when it is not the one the launcher read (a port 0 bound). */
  running?: (stage: Stage) => string;
  /** The level in effect after this step drops the info settings line. */
  noSettingsLine?: true;
}

interface Group {
  name: string;
  /** The file's lines at start, beside the stack's own: every setting is read from the file, not a flag, which would win over it. */
  base: (stage: Omit<Stage, 'stack'>) => Partial<Record<SettingKey, string>>;
  steps: Step[];
}

const HELLO = 'hello from the first www\n';
const PAGE = '<h1>our own 404</h1>\n';

/** The message of each line of a log, in either layout (--log-format json writes one object a line). */
function messages(sandbox: Sandbox, file: 'error.log' | 'host.log'): string[] {
  return readLog(sandbox, file).map((line) => (line.startsWith('{') ? String((JSON.parse(line) as { message: string }).message) : line));
}

/** The common name of the certificate a new handshake is given. */
async function servedName(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connectTls({ host: hostname, port: Number(port), rejectUnauthorized: false, servername: 'localhost' });
  await once(socket, 'secureConnect');
  const name = String(socket.getPeerCertificate().subject.CN);
  socket.destroy();
  return name;
}

/** Steps of settings seen in the settings lines only, each changed by a SIGHUP of its own and needing a restart. */
const restartOnly = (values: Partial<Record<SettingKey, string>>): Step[] =>
  Object.entries(values).map(([key, value]) => ({ set: () => ({ [key]: value }), said: 'restart' }));

/** A proxy setting new workers take where there are two; one process applies it to the requests that come next. */
const byWorkers = (proxyWorkers: number): Said => (proxyWorkers > 1 ? 'replaced' : 'applied');

/**
 * Waits until every request `check` makes sees the new settings: one process's new request path (its engine is
 * loaded first), or with two workers every one started since the SIGHUP.
 */
const inEffect = (stage: Stage, check: () => Promise<unknown>) =>
  stage.proxyWorkers > 1
    ? everyWorkerRenewed(stage.sandbox, stage.workersAtSighup, check)
    : eventually(
        () =>
          check().then(
            () => true as const,
            () => undefined,
          ),
        5000,
        'the new settings in effect',
      );

/**
 * Steps of proxy settings new workers take, seen in the settings lines and, where there are two workers, in the
 * old ones retiring: each step's new workers are all listening before the next SIGHUP.
 */
const newWorkersOnly = (values: Partial<Record<SettingKey, string>>): Step[] =>
  Object.entries(values).map(([key, value]) => ({
    set: () => ({ [key]: value }),
    said: byWorkers,
    observe: ({ sandbox, proxyWorkers, workersAtSighup }) => (proxyWorkers > 1 ? oldWorkersRetired(sandbox, workersAtSighup) : undefined),
  }));

/**
 * Steps of the host's worker limits: the pool replaces each of its workers (two, since the --workers step) with
 * one started with them, at any proxy worker count; seen by the replacements' lines and the settings line.
 */
const newHostWorkers = (values: Partial<Record<SettingKey, string>>, workers = 2): Step[] =>
  Object.entries(values).map(([key, value], k) => ({
    set: () => ({ [key]: value }),
    said: 'replaced',
    observe: ({ sandbox }) =>
      eventually(
        () =>
          messages(sandbox, 'host.log').filter((m) => m.includes('(new settings from SIGHUP)')).length === (k + 1) * workers
            ? true
            : undefined,
        5000,
        `replacement ${k + 1} of the host worker`,
      ),
  }));

/** What a step's line says at this many proxy workers. */
const saidAt = (step: Step, proxyWorkers: number): Said => (typeof step.said === 'function' ? step.said(proxyWorkers) : step.said);

/** The pids of the proxy's workers under `pid` (the launcher or `extqs proxy`). */
const proxyWorkerPids = (pid: number): number[] => descendants(pid).filter((child) => roleOf(child) === 'proxy worker');

/** Enough answers that each of three workers, handed new connections in turn, gives several. */
const ANSWERS_IN_A_ROW = 20;

/** Waits until every proxy worker of `before` has finished what it held and exited. */
const oldWorkersRetired = (sandbox: Sandbox, before: number[]) =>
  eventually(
    () => {
      const log = messages(sandbox, 'error.log');
      return before.every((pid) => log.some((m) => m.includes(`proxy worker ${pid} retired`))) || undefined;
    },
    15_000,
    `proxy workers ${before.join(', ')} to retire`,
  );

/**
 * Waits until every proxy worker of `before` has retired, then requires ANSWERS_IN_A_ROW answers in a row to pass
 * `check`: a worker left on the old settings never retires, and would fail its share of the answers.
 */
async function everyWorkerRenewed(sandbox: Sandbox, before: number[], check: () => Promise<unknown>): Promise<void> {
  expect(before, 'proxy workers before the SIGHUP').not.to.deep.equal([]);
  await oldWorkersRetired(sandbox, before);
  for (let answer = 0; answer < ANSWERS_IN_A_ROW; answer++) await check();
}

const GROUPS: Group[] = [
  {
    name: 'applied live, seen in what the service does',
    // Only 127.0.0.1 may see the status page, so a client on 127.0.0.2 makes an error line.
    base: () => ({ statusAllow: '127.0.0.1' }),
    steps: [
      {
        set: () => ({ compression: 'off' }),
        said: 'applied',
        observe: async ({ stack }) => {
          const res = await get(stack.url, '/big.txt', { headers: { 'Accept-Encoding': 'gzip' } });
          expect(res.headers['content-encoding'], 'no coding after --compression off').to.equal(undefined);
        },
      },
      {
        set: ({ sandbox }) => ({ errorDocuments: `404=${join(sandbox.dir, 'missing.html')}` }),
        said: 'applied',
        observe: async ({ stack }) => {
          const res = await get(stack.url, '/no-such-file.txt');
          expect([res.status, res.body]).to.deep.equal([404, PAGE]);
        },
      },
      { set: () => ({ logMaxSize: '1m' }), said: 'applied' },
      { set: () => ({ logMaxFiles: '3' }), said: 'applied' },
      {
        set: () => ({ logFormat: 'json' }),
        said: 'applied',
        observe: async ({ stack, sandbox }) => {
          const id = (await get(stack.url, '/hello.txt')).headers['x-request-id'] as string;
          const line = await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes(id)), 3000, 'the access line');
          expect(JSON.parse(line)).to.include({ status: 200 });
        },
      },
      {
        set: () => ({ logLevel: 'warn' }),
        said: 'applied',
        noSettingsLine: true,
        observe: async ({ stack, sandbox }) => {
          // A miss is an info line (AH00128), a client refused the status page an error line.
          const missId = (await get(stack.url, '/favicon.ico')).headers['x-request-id'] as string;
          const deniedId = (await get(stack.url, '/server-status', { localAddress: '127.0.0.2' })).headers['x-request-id'] as string;
          await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(deniedId)), 3000, 'the error line');
          expect(readLog(sandbox, 'error.log').filter((l) => l.includes(missId))).to.deep.equal([]);
        },
      },
    ],
  },
  {
    name: 'needing a restart, the old values still in effect',
    base: ({ idlePort }) => ({ tlsPort: String(idlePort) }),
    steps: [
      {
        set: () => ({ port: '1' }),
        said: 'restart',
        // The proxy keeps the port its --port 0 bound.
        running: ({ stack }) => new URL(stack.url).port,
        observe: async ({ stack }) => expect((await get(stack.url, '/hello.txt')).body).to.equal(HELLO),
      },
      {
        set: () => ({ listen: '127.0.0.2' }),
        said: 'restart',
        observe: async ({ stack }) => expect((await get(stack.url, '/hello.txt')).status).to.equal(200),
      },
      ...restartOnly({ tlsPort: '2' }),
      {
        // Once said "applied" with two proxy workers while no HTTPS listener was opened.
        set: ({ pair }) => ({ tlsCert: pair.cert, tlsKey: pair.key }),
        said: 'restart',
        observe: async ({ idlePort }) => expect(await accepts(idlePort), 'an HTTPS listener').to.equal(false),
      },
      {
        set: () => ({ tlsRedirect: 'on' }),
        said: 'restart',
        observe: async ({ stack }) => expect((await get(stack.url, '/hello.txt')).status).to.equal(200),
      },
      ...newWorkersOnly({ h2MaxConcurrentStreams: '10' }),
      {
        // From 2 to 3 a worker starts; from 1 to 2 the lone process would need a primary.
        set: ({ proxyWorkers }) => ({ proxyWorkers: String(proxyWorkers + 1) }),
        said: (proxyWorkers) => (proxyWorkers > 1 ? 'replaced' : 'restart'),
        observe: async ({ stack, proxyWorkers }) => {
          const workers = async () => total((await get(stack.url, '/metrics')).body, 'extqs_proxy_workers');
          if (proxyWorkers === 1) {
            for (let scrape = 0; scrape < 2; scrape++) expect(await workers()).to.equal(1);
            return;
          }
          // The primary sums the workers' shares: any worker's answer counts them all.
          await eventually(
            async () => ((await workers()) === proxyWorkers + 1 ? true : undefined),
            5000,
            `${proxyWorkers + 1} proxy workers counted`,
          );
        },
      },
      {
        set: ({ sandbox }) => ({ www: join(sandbox.dir, 'www2') }),
        said: 'restart',
        observe: async ({ stack }) => expect((await get(stack.url, '/hello.txt')).body).to.equal(HELLO),
      },
      ...restartOnly({ followSymlinks: 'off' }),
      {
        set: () => ({ serverTokens: 'prod' }),
        said: byWorkers,
        observe: (stage) =>
          inEffect(stage, async () => expect((await get(stage.stack.url, '/hello.txt')).headers.server).to.equal('extqs')),
      },
      {
        set: ({ sandbox }) => ({ logs: join(sandbox.dir, 'logs2') }),
        said: 'restart',
        // The reload line itself was found in the old directory.
        observe: ({ sandbox }) => expect(existsSync(join(sandbox.dir, 'logs2', 'error.log'))).to.equal(false),
      },
      {
        set: ({ sandbox }) => ({ pidFile: join(sandbox.dir, 'extqs.pid') }),
        said: 'restart',
        observe: ({ sandbox }) => expect(existsSync(join(sandbox.dir, 'extqs.pid'))).to.equal(false),
      },
      {
        set: () => ({ workers: '2' }),
        said: 'applied',
        // The pool starts a second worker; /metrics counts the processes it holds.
        observe: ({ stack }) =>
          eventually(
            async () => /^extqs_host_total_processes\{[^}]*\} 2$/m.test((await get(stack.url, '/metrics')).body) || undefined,
            10_000,
            'a second host worker',
          ),
      },
      {
        set: () => ({ listenBacklog: '100' }),
        said: 'applied',
        observe: async ({ stack }) =>
          expect((await get(stack.url, '/metrics')).body).to.match(/^extqs_host_listen_queue_length\{[^}]*\} 100$/m),
      },
      {
        set: () => ({ workerConcurrency: '3' }),
        said: 'applied',
        observe: async ({ stack }) =>
          expect((await get(stack.url, '/metrics')).body).to.match(/^extqs_host_worker_concurrency\{[^}]*\} 3$/m),
      },
      ...Object.entries({
        spareWorkers: '1',
        spoolMaxSize: '2g',
        startWorkers: '7',
        minSpareWorkers: '2',
        maxSpareWorkers: '9',
        workerIdleTimeout: '20',
      }).map(([key, value]) => ({
        set: () => ({ [key]: value }),
        said: 'applied' as const,
      })),
      ...newHostWorkers({
        maxRequests: '100',
        maxExecutionTime: '40',
        slowlogTimeout: '5',
        postMaxSize: '1m',
        uploadMaxFilesize: '1m',
        maxFileUploads: '3',
        outputBuffering: '8192',
      }),
      ...restartOnly({
        metricsPort: '0',
        pm: 'ondemand',
        shutdownTimeout: '50',
      }),
      ...newWorkersOnly({ upstreamTimeout: '45', forwarder: 'http-proxy' }),
      {
        // 127.0.0.1 is refused from now on by the new workers.
        set: () => ({ statusAllow: '10.0.0.0/8' }),
        said: byWorkers,
        observe: (stage) => inEffect(stage, async () => expect((await get(stage.stack.url, '/server-status?auto')).status).to.equal(403)),
      },
      ...newWorkersOnly({
        upstreamMaxFails: '3',
        upstreamFailTimeout: '20',
        headerTimeout: '30',
        requestTimeout: '90',
        keepAliveTimeout: '2',
        maxHeaderSize: '8192',
      }),
      {
        set: () => ({ maxHeaderFields: '5' }),
        said: byWorkers,
        observe: (stage) => {
          const headers = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`x-field-${i}`, 'x']));
          return inEffect(stage, async () => expect((await get(stage.stack.url, '/hello.txt', { headers })).status).to.equal(400));
        },
      },
      {
        set: () => ({ limitRequestBody: '1k' }),
        said: byWorkers,
        observe: (stage) =>
          inEffect(stage, async () =>
            expect((await get(stage.stack.url, '/hello.txt', { method: 'POST', body: 'x'.repeat(2048) })).status).to.equal(413),
          ),
      },
      ...newWorkersOnly({ maxConnections: '10', limitRequestFieldSize: '4000' }),
      // The launcher sets these for its children: `extqs start` does not read them, and says nothing of them.
      { set: () => ({ upstreams: 'http://127.0.0.1:9' }), said: 'not taken' },
      { set: ({ sandbox }) => ({ socket: join(sandbox.dir, 'other.sock') }), said: 'not taken' },
      { set: () => ({ hostListen: '127.0.0.3' }), said: 'not taken' },
      { set: () => ({ hostPort: '9' }), said: 'not taken' },
      { set: () => ({ hostAllow: '127.0.0.1' }), said: 'not taken' },
      ...(['mtlsCa', 'mtlsCert', 'mtlsKey'] as const).map((key) => ({
        set: ({ pair }: { pair: { cert: string; key: string } }) => ({ [key]: key === 'mtlsKey' ? pair.key : pair.cert }),
        said: 'not taken' as const,
      })),
      // The file cannot name itself: it is not read, and the running configuration is kept.
      { set: ({ sandbox }) => ({ configFile: join(sandbox.dir, 'other.conf') }), said: 'not read' },
    ],
  },
  {
    name: 'HTTPS, started with a certificate',
    base: ({ pair }) => ({ tlsPort: '0', tlsCert: pair.cert, tlsKey: pair.key }),
    steps: [
      {
        set: ({ renewed }) => ({ tlsCert: renewed.cert, tlsKey: renewed.key }),
        said: 'applied',
        observe: async ({ stack }) => expect(await servedName(stack.tlsUrl!)).to.equal('renewed'),
      },
      {
        set: () => ({ tlsRedirect: 'on' }),
        said: 'applied',
        observe: async ({ stack }) => expect((await get(stack.url, '/hello.txt')).status).to.equal(301),
      },
      {
        // Closing the HTTPS listener needs a restart: it keeps serving, and redirecting to it.
        set: () => ({ tlsCert: undefined, tlsKey: undefined, tlsRedirect: undefined }),
        said: 'restart',
        observe: async ({ stack }) => {
          expect(await servedName(stack.tlsUrl!)).to.equal('renewed');
          expect((await get(stack.url, '/hello.txt')).status).to.equal(301);
        },
      },
    ],
  },
];

/** Enough of a stage to list the settings a step changes. */
const STUB = { sandbox: { dir: '' }, pair: { cert: '', key: '' }, renewed: { cert: '', key: '' }, proxyWorkers: 1 } as unknown as Stage;
const keysOf = (step: Step) => Object.keys(step.set(STUB)) as SettingKey[];

/** The parts of a note: what it says is applied, applied by new workers, and what needs a restart. */
function entriesOf(note: string): Record<'applied' | 'replaced' | 'restart', string> {
  const [live, restart = ''] = note.split('need a restart to apply: ');
  const [applied, replaced = ''] = live.split('applied by starting new workers: ');
  return { applied, replaced, restart };
}

function entry(part: string, key: SettingKey): { before: string; after: string } | undefined {
  const match = new RegExp(`(?:^|[ ,])--${specOf(key).flag} (.+?) -> (.+?)(?:, --|; |$)`).exec(part);
  return match ? { before: match[1], after: match[2] } : undefined;
}

/** The --config file: a NAME=value line per setting given a value. */
function writeConfig(sandbox: Sandbox, values: Partial<Record<SettingKey, string | undefined>>): void {
  const lines = Object.entries(values).flatMap(([key, value]) =>
    value === undefined ? [] : [`${specOf(key as SettingKey).env}=${value}\n`],
  );
  writeFileSync(join(sandbox.dir, 'extqs.conf'), lines.join(''));
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

for (const proxyWorkers of [1, 2]) {
  describe(`every setting through a SIGHUP, --proxy-workers ${proxyWorkers}`, function () {
    for (const group of GROUPS) {
      describe(group.name, function () {
        let stage: Stage;
        const file: Partial<Record<SettingKey, string>> = {};
        let sighups = 0;

        before(async function () {
          const sandbox = makeSandbox();
          writeFileSync(join(sandbox.www, 'public', 'hello.txt'), HELLO);
          writeFileSync(join(sandbox.www, 'public', 'big.txt'), 'compressible text '.repeat(500));
          writeFileSync(join(sandbox.dir, 'missing.html'), PAGE);
          for (const sub of ['public', 'controllers']) mkdirSync(join(sandbox.dir, 'www2', sub), { recursive: true });
          const pair = makeCertificate(sandbox.dir, 'first', '/CN=first');
          const renewed = makeCertificate(sandbox.dir, 'renewed', '/CN=renewed');
          const base = { sandbox, proxyWorkers, pair, renewed, idlePort: await freePort(), workersAtSighup: [] };
          Object.assign(file, {
            port: '0',
            listen: '127.0.0.1',
            www: sandbox.www,
            logs: sandbox.logs,
            workers: '1',
            proxyWorkers: String(proxyWorkers),
            ...group.base(base),
          });
          writeConfig(sandbox, file);
          const stack = await spawnReady(['bin/extqs.js', 'start', '--config', join(sandbox.dir, 'extqs.conf')]);
          stage = { ...base, stack };
        });

        after(async function () {
          await stage?.stack.stop();
          stage?.sandbox.remove();
        });

        for (const step of group.steps) {
          const said = saidAt(step, proxyWorkers);
          it(`${keysOf(step).join(', ')}: ${said}`, async function () {
            const { sandbox, stack } = stage;
            const changes = step.set(stage);
            writeConfig(sandbox, { ...file, ...changes });
            stage.workersAtSighup = proxyWorkerPids(stack.child.pid!);
            stack.child.kill('SIGHUP');
            sighups += 1;
            const count = (texts: string[], what: string) => texts.filter((t) => t.includes(what)).length;
            const launcherLine = await eventually(
              () =>
                stack
                  .stderr()
                  .split('\n')
                  .filter((l) => l.includes('extqs: SIGHUP: '))[sighups - 1],
              5000,
              `the launcher's SIGHUP line; stderr: ${stack.stderr()}`,
            );
            const note = launcherLine.replace(/^extqs: SIGHUP: the children reopen their logs; /, '');
            expect(note).not.to.contain('undefined');
            // Each process writes the launcher's note, after the files it reopened.
            for (const log of ['error.log', 'host.log'] as const) {
              const line = await eventually(
                () => messages(sandbox, log).filter((m) => m.includes('SIGHUP received'))[sighups - 1],
                5000,
                `the SIGHUP line of ${log}`,
              );
              expect(line.endsWith(`; ${note}`), `${log}: ${line}`).to.equal(true);
            }
            if (said === 'not read') {
              expect(note).to.match(/^configuration not read again, the running one is kept: /);
              expect(note).to.contain(specOf('configFile').env);
              return; // the next step's file leaves the line out
            }
            Object.assign(file, changes);
            const parts = entriesOf(note);
            for (const key of keysOf(step)) {
              if (said === 'not taken') {
                expect(note, key).not.to.contain(`--${specOf(key).flag} `);
                continue;
              }
              const found = entry(parts[said], key);
              expect(found, `${key} under "${said}" in: ${note}`).not.to.equal(undefined);
              for (const other of ['applied', 'replaced', 'restart'] as const)
                if (other !== said) expect(entry(parts[other], key), `${key} said once`).to.equal(undefined);
              if (step.noSettingsLine) continue;
              // The settings the process runs with from now on: the new value if applied, else the old.
              const value = step.running?.(stage) ?? (said === 'restart' ? found!.before : found!.after);
              const roles = specOf(key).roles;
              for (const [log, prefix, role] of [
                ['error.log', 'settings: ', 'proxy'],
                ['host.log', 'Settings: ', 'host'],
              ] as const) {
                if (!(roles as readonly string[]).includes(role)) continue;
                const settings = await eventually(
                  () => {
                    const all = messages(sandbox, log);
                    const at = all.reduce((last, m, i) => (m.includes('SIGHUP received') ? i : last), -1);
                    return count(all, 'SIGHUP received') === sighups
                      ? all.slice(at).find((m) => m.startsWith(prefix) || m.includes(` ${prefix}`))
                      : undefined;
                  },
                  5000,
                  `the settings line of ${log}`,
                );
                expect(settings, `${log}: ${key}: ${settings}`).to.match(new RegExp(` --${specOf(key).flag} ${escape(value)}( |$)`));
              }
            }
            await step.observe?.(stage);
          });
        }
      });
    }
  });
}

describe('the SIGHUP table', function () {
  it('walks every setting of the settings table', function () {
    const walked = new Set(GROUPS.flatMap((group) => group.steps.flatMap(keysOf)));
    expect(SETTING_KEYS.filter((key) => !walked.has(key))).to.deep.equal([]);
  });
});

describe('a SIGHUP sent to extqs proxy on its own', function () {
  it('at --proxy-workers 1, keeps its hosts and what it learnt of them through a SIGHUP that changes none of its settings', async function () {
    const sandbox = makeSandbox();
    const running: Running[] = [];
    try {
      writeFileSync(join(sandbox.controllers, 'Which.ts'), `export default () => 'a';\n`);
      const socket = (name: string) => join(sandbox.dir, name);
      running.push(
        await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--socket', socket('a.sock'), '--workers', '1']),
      );
      // b.sock has no host: its first failed connect takes it out of the rotation for a minute.
      const conf = join(sandbox.dir, 'proxy.conf');
      writeFileSync(conf, `EXTQS_UPSTREAM=unix:${socket('a.sock')},unix:${socket('b.sock')}\nEXTQS_UPSTREAM_FAIL_TIMEOUT=60\n`);
      const proxy = await startProxy(sandbox, ['--proxy-workers', '1', '--config', conf]);
      running.push(proxy);
      const outLines = () => readLog(sandbox, 'error.log').filter((l) => l.includes('b.sock out of the rotation')).length;
      const bUp = async () => /^extqs_upstream_up\{upstream="[^"]*b\.sock"\} (\d)$/m.exec((await get(proxy.url, '/metrics')).body)?.[1];
      /** Waits for a line written after everything before it (a missing file's), so a count of the earlier ones is final. */
      const linesSettled = async (marker: string) => {
        await get(proxy.url, `/${marker}`);
        await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(marker)), 3000, `the line of /${marker}`);
      };
      for (let i = 0; i < 2; i++) expect((await get(proxy.url, '/External/Which')).body).to.equal('a');
      await linesSettled('first-marker.txt');
      expect([outLines(), await bUp()]).to.deep.equal([1, '0']);

      // logrotate's SIGHUP: the files reopened, nothing else.
      proxy.child.kill('SIGHUP');
      await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')), 5000, 'the reload line');
      // A new request path would have put b.sock back in the rotation, and the next requests would fail on it again.
      for (let i = 0; i < ANSWERS_IN_A_ROW; i++) expect((await get(proxy.url, '/External/Which')).body).to.equal('a');
      await linesSettled('second-marker.txt');
      expect([outLines(), await bUp()]).to.deep.equal([1, '0']);
    } finally {
      for (const each of running.reverse()) await each.stop();
      sandbox.remove();
    }
  });

  it('at --proxy-workers 1, sends new requests to a new --upstream while one in flight ends on the old host', async function () {
    const sandbox = makeSandbox();
    const running: Running[] = [];
    const held = holdController(sandbox, 'Held');
    try {
      // Two real hosts, each with its own Which controller; Held, on the first, answers once released.
      const wwwB = join(sandbox.dir, 'www-b');
      for (const dir of [join(wwwB, 'controllers'), join(wwwB, 'public'), join(sandbox.dir, 'logs-b')]) mkdirSync(dir, { recursive: true });
      writeFileSync(join(sandbox.controllers, 'Which.ts'), `export default () => 'a';\n`);
      writeFileSync(join(wwwB, 'controllers', 'Which.ts'), `export default () => 'b';\n`);
      const socket = (name: string) => join(sandbox.dir, name);
      for (const [www, logs, name] of [
        [sandbox.www, sandbox.logs, 'a.sock'],
        [wwwB, join(sandbox.dir, 'logs-b'), 'b.sock'],
      ])
        running.push(await startProcess('host', ['--www', www, '--logs', logs, '--socket', socket(name), '--workers', '1']));
      const conf = join(sandbox.dir, 'proxy.conf');
      writeFileSync(conf, `EXTQS_UPSTREAM=unix:${socket('a.sock')}\n`);
      const proxy = await startProxy(sandbox, ['--proxy-workers', '1', '--config', conf]);
      running.push(proxy);
      const which = async () => (await get(proxy.url, '/External/Which')).body;
      expect(await which()).to.equal('a');
      const inFlight = get(proxy.url, '/External/Held');
      await held.reached();

      writeFileSync(conf, `EXTQS_UPSTREAM=unix:${socket('b.sock')}\n`);
      proxy.child.kill('SIGHUP');
      await eventually(async () => ((await which()) === 'b' ? true : undefined), 5000, 'the new upstream answering');
      for (let answer = 0; answer < ANSWERS_IN_A_ROW; answer++) expect(await which()).to.equal('b');
      held.release();
      const answer = await inFlight;
      expect([answer.status, answer.body]).to.deep.equal([200, 'released']);
    } finally {
      held.release();
      for (const each of running.reverse()) await each.stop();
      sandbox.remove();
    }
  });

  for (const proxyWorkers of [1, 2]) {
    it(`adding a certificate needs a restart and opens no HTTPS listener, at --proxy-workers ${proxyWorkers}`, async function () {
      const sandbox = makeSandbox();
      const conf = join(sandbox.dir, 'proxy.conf');
      const port = await freePort();
      writeFileSync(conf, `EXTQS_TLS_PORT=${port}\n`);
      const args = ['--upstream', `unix:${join(sandbox.dir, 'none.sock')}`, '--proxy-workers', String(proxyWorkers), '--config', conf];
      const proxy = await startProxy(sandbox, args);
      try {
        const pair = makeCertificate(sandbox.dir);
        writeFileSync(conf, `EXTQS_TLS_PORT=${port}\nEXTQS_TLS_CERT=${pair.cert}\nEXTQS_TLS_KEY=${pair.key}\nEXTQS_LOG_LEVEL=warn\n`);
        proxy.child.kill('SIGHUP');
        const line = await eventually(
          () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
          5000,
          'the reload line',
        );
        expect(line).to.contain(
          `applied --log-level "info" -> "warn"; need a restart to apply: --tls-cert none -> ${JSON.stringify(pair.cert)}, --tls-key none -> ${JSON.stringify(pair.key)}`,
        );
        expect(await accepts(port), 'an HTTPS listener').to.equal(false);
      } finally {
        await proxy.stop();
        sandbox.remove();
      }
    });

    it(`--server-tokens and --upstream: ${byWorkers(proxyWorkers)}, at --proxy-workers ${proxyWorkers}`, async function () {
      const sandbox = makeSandbox();
      writeFileSync(join(sandbox.www, 'public', 'hello.txt'), HELLO);
      const conf = join(sandbox.dir, 'proxy.conf');
      const upstream = (name: string) => `unix:${join(sandbox.dir, name)}`;
      writeFileSync(conf, `EXTQS_UPSTREAM=${upstream('a.sock')}\n`);
      const proxy = await startProxy(sandbox, ['--proxy-workers', String(proxyWorkers), '--config', conf]);
      try {
        writeFileSync(conf, `EXTQS_UPSTREAM=${upstream('b.sock')}\nEXTQS_SERVER_TOKENS=prod\n`);
        const workersAtSighup = proxyWorkerPids(proxy.child.pid!);
        proxy.child.kill('SIGHUP');
        const line = await eventually(
          () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
          5000,
          'the reload line',
        );
        const changes = `--server-tokens "full" -> "prod", --upstream "${upstream('a.sock')}" -> "${upstream('b.sock')}"`;
        const server = async () => (await get(proxy.url, '/hello.txt')).headers.server;
        if (proxyWorkers === 1) {
          expect(line).to.contain(`applied ${changes}`);
          await eventually(async () => ((await server()) === 'extqs' ? true : undefined), 5000, 'the new Server field');
        } else {
          expect(line).to.contain(`applied by starting new workers: ${changes}`);
          expect(workersAtSighup, 'one per --proxy-workers').to.have.length(proxyWorkers);
          await everyWorkerRenewed(sandbox, workersAtSighup, async () => expect(await server()).to.equal('extqs'));
        }
      } finally {
        await proxy.stop();
        sandbox.remove();
      }
    });
  }
});
