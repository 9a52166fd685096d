// deploy/container/Containerfile's settings held to the settings table: an EXTQS_ name the table does not have
// is ignored without a word at run time (EXTQS_WWW once left the image serving its own empty www/).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { readConfig } from '../../common/config.ts';
import { SETTING_KEYS, specOf } from '../../common/settings.ts';
import { makeSandbox, ROOT } from '../helpers/stack.ts';

/** The NAME=value pairs of the image's ENV instructions, continuation lines joined. */
function imageEnv(): Record<string, string> {
  const text = readFileSync(join(ROOT, 'deploy/container/Containerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const pairs = text
    .split('\n')
    .filter((line) => line.startsWith('ENV '))
    .flatMap((line) => line.slice(4).trim().split(/\s+/))
    .map((pair) => pair.split('=', 2) as [string, string]);
  return Object.fromEntries(pairs);
}

describe('the Containerfile', function () {
  it('sets only settings of the table, each with a value `extqs start` accepts', function () {
    const env = imageEnv();
    const settings = Object.keys(env).filter((name) => name.startsWith('EXTQS_'));
    const known = new Set(SETTING_KEYS.map((key) => specOf(key).env));
    expect(settings).to.include.members(['EXTQS_WWW_ROOT', 'EXTQS_LOG_DIR', 'EXTQS_PORT']);
    for (const name of settings) expect(known.has(name), name).to.equal(true);
    const sandbox = makeSandbox();
    try {
      // /opt/extqs/www exists only in the image: the sandbox's www/ stands in for it.
      const config = readConfig('start', [], { ...env, EXTQS_WWW_ROOT: sandbox.www }, sandbox.dir);
      expect(config).to.include({ logs: '-', port: 8080, listen: '0.0.0.0' });
    } finally {
      sandbox.remove();
    }
  });
});
