// `--logs -` (docs/design.md §10): the same lines as the files, access.log's on stdout and error.log's and
// host.log's on stderr, so `podman logs` and a log collector read them; no file is written.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The seed's four requests (docs/design.md §1). */
const SEED = ['/External/Latest?sn=123&no=1', '/External/Latest?sn=123&no=', '/External/Alarm?all_alarm&all', '/favicon.ico'];

describe('logs on the standard streams (--logs -)', function () {
  let sandbox: Sandbox;
  let stack: Running | undefined;

  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async () => {
    await stack?.stop();
    sandbox.remove();
  });

  it('writes access lines on stdout and error and host lines on stderr, in their formats, and no file', async function () {
    // The sandbox's logs/ would be the default directory: another one proves nothing is written anywhere.
    stack = await startStack(sandbox, ['--logs', '-', '--workers', '1', '--proxy-workers', '1']);
    for (const path of SEED) await get(stack.url, path);
    const accessLines = () =>
      stack!
        .stdout()
        .split('\n')
        .filter((line) => / HTTP\/1\.1" \d{3} /.test(line));
    await eventually(() => (accessLines().length === 4 ? true : undefined), 3000, 'four access lines on stdout');
    expect(accessLines().map((line) => /"GET (\S+) HTTP\/1\.1" (\d{3})/.exec(line)?.slice(1))).to.deep.equal(
      SEED.map((path) => [path, path === '/favicon.ico' ? '404' : '500']),
    );
    for (const line of accessLines()) expect(line).to.match(/^127\.0\.0\.1 - - \[[^\]]+\] "GET \S+ HTTP\/1\.1" \d{3} \d+ "-" "-"$/);
    const stderr = () => stack!.stderr();
    await eventually(() => (stderr().includes('AH00128: File does not exist') ? true : undefined), 3000, 'the favicon line on stderr');
    expect(stderr()).to.match(
      /\[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: PHP Fatal error: {2}Failed opening/,
    );
    expect(stderr()).to.contain('End of script output before headers: /External/Latest');
    expect(stderr()).to.match(/\[\d{2}-\w{3}-\d{4} [\d:.]+ UTC\] \[error\] \[req [0-9a-f-]+\] Failed opening controller script/);
    expect(stderr()).to.contain('[mpm_event:notice]');
    expect(stack.stdout()).to.not.contain('[mpm_event:notice]');
    expect(existsSync(join(sandbox.logs, 'access.log'))).to.equal(false);
    expect(existsSync(join(sandbox.logs, 'error.log'))).to.equal(false);
    expect(existsSync(join(sandbox.logs, 'host.log'))).to.equal(false);
  });
});
