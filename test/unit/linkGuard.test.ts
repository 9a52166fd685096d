// --follow-symlinks: the decision for one link from its facts (judgeLink), and the guard's walk over a
// real tree (every component below the root, sync and async alike), and its check of an opened file.
import {
  chownSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  realpathSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { judgeLink, LinkGuard, type LinkFacts, type LinkVerdict } from '../../common/linkGuard.ts';
import { FOLLOW_SYMLINKS } from '../../common/settings.ts';

const ROOT = '/srv/www/public';

function facts(target: { path: string; uid: number } | undefined, linkUid = 1000): LinkFacts {
  return { link: { path: `${ROOT}/p.txt`, uid: linkUid }, target };
}

describe('judgeLink: whether one link is followed', () => {
  const cases: { what: string; facts: LinkFacts; follows: Record<(typeof FOLLOW_SYMLINKS)[number], boolean> }[] = [
    {
      what: 'a link to a file in the same root with the same owner',
      facts: facts({ path: `${ROOT}/real.txt`, uid: 1000 }),
      follows: { on: true, owner: true, off: false },
    },
    {
      what: 'a link to the root itself',
      facts: facts({ path: ROOT, uid: 1000 }),
      follows: { on: true, owner: true, off: false },
    },
    {
      what: 'a link out of the root (/etc/passwd), same owner',
      facts: facts({ path: '/etc/passwd', uid: 1000 }),
      follows: { on: true, owner: false, off: false },
    },
    {
      what: 'a link to a sibling whose name starts with the root (/srv/www/public-old)',
      facts: facts({ path: `${ROOT}-old/x.txt`, uid: 1000 }),
      follows: { on: true, owner: false, off: false },
    },
    {
      what: 'a link inside the root to a file of another owner',
      facts: facts({ path: `${ROOT}/theirs.txt`, uid: 0 }),
      follows: { on: true, owner: false, off: false },
    },
    {
      what: 'a link whose target cannot be reached (dangling, a loop)',
      facts: facts(undefined),
      follows: { on: true, owner: false, off: false },
    },
  ];

  for (const { what, facts: given, follows } of cases) {
    for (const mode of FOLLOW_SYMLINKS) {
      it(`${follows[mode] ? 'follows' : 'refuses'} ${what} in mode ${mode}`, () => {
        const reason = judgeLink(mode, ROOT, given);
        if (follows[mode]) expect(reason).to.equal(undefined);
        else expect(reason).to.be.a('string').and.have.length.above(10);
      });
    }
  }

  it('says why: outside, another owner, unreachable, or off', () => {
    expect(judgeLink('owner', ROOT, facts({ path: '/etc/passwd', uid: 1000 }))).to.equal(`its target /etc/passwd is outside ${ROOT}`);
    expect(judgeLink('owner', ROOT, facts({ path: `${ROOT}/t.txt`, uid: 0 }))).to.equal(
      `its target ${ROOT}/t.txt is owned by uid 0, the link by uid 1000`,
    );
    expect(judgeLink('owner', ROOT, facts(undefined))).to.equal('its target cannot be reached');
    expect(judgeLink('off', ROOT, facts({ path: `${ROOT}/t.txt`, uid: 1000 }))).to.equal(
      'symbolic links are not followed (--follow-symlinks off)',
    );
  });
});

describe('LinkGuard over a real tree', () => {
  let dir: string;
  let root: string;
  const isRoot = process.getuid?.() === 0;

  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'extqs-links-')));
    root = join(dir, 'public');
    mkdirSync(join(root, 'inner'), { recursive: true });
    mkdirSync(join(dir, 'outside'));
    writeFileSync(join(root, 'real.txt'), 'real');
    writeFileSync(join(root, 'inner', 'page.txt'), 'page');
    writeFileSync(join(dir, 'outside', 'secret.txt'), 'secret');
    symlinkSync('real.txt', join(root, 'alias.txt'));
    symlinkSync('/etc/passwd', join(root, 'passwd.txt'));
    symlinkSync('../outside', join(root, 'outdir'));
    symlinkSync('inner', join(root, 'innerlink'));
    symlinkSync('nowhere.txt', join(root, 'dangling.txt'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Both ways of running the rule, which must agree. */
  async function judge(mode: (typeof FOLLOW_SYMLINKS)[number], rel: string): Promise<LinkVerdict> {
    const guard = new LinkGuard(root, mode);
    const sync = guard.checkSync(join(root, rel));
    expect(await guard.check(join(root, rel)), `sync and async agree on ${rel}`).to.deep.equal(sync);
    return sync;
  }

  it('follows a plain file in every mode, resolved to itself', async () => {
    for (const mode of FOLLOW_SYMLINKS) {
      const verdict = await judge(mode, 'inner/page.txt');
      expect(verdict.follow, mode).to.equal(true);
    }
    expect(await judge('owner', 'inner/page.txt')).to.deep.equal({ follow: true, real: join(root, 'inner', 'page.txt') });
  });

  it('lets a missing file through (send answers 404), with no real path', async () => {
    expect(await judge('owner', 'gone.txt')).to.deep.equal({ follow: true, real: undefined });
    expect(await judge('off', 'inner/gone/deeper.txt')).to.deep.equal({ follow: true, real: undefined });
  });

  it('refuses a link to /etc/passwd in owner and off, and follows it in on', async () => {
    expect(await judge('owner', 'passwd.txt')).to.deep.equal({
      follow: false,
      link: join(root, 'passwd.txt'),
      reason: `its target ${realpathSync('/etc/passwd')} is outside ${root}`,
    });
    expect((await judge('off', 'passwd.txt')).follow).to.equal(false);
    expect((await judge('on', 'passwd.txt')).follow).to.equal(true);
  });

  it('refuses a linked directory out of the root in the middle of the path, naming the directory', async () => {
    const verdict = await judge('owner', 'outdir/secret.txt');
    expect(verdict).to.deep.equal({
      follow: false,
      link: join(root, 'outdir'),
      reason: `its target ${join(dir, 'outside')} is outside ${root}`,
    });
    expect((await judge('on', 'outdir/secret.txt')).follow).to.equal(true);
  });

  it('follows links to a file and to a directory inside the root in owner and on, not in off', async () => {
    for (const rel of ['alias.txt', 'innerlink/page.txt']) {
      expect((await judge('owner', rel)).follow, `owner ${rel}`).to.equal(true);
      expect((await judge('on', rel)).follow, `on ${rel}`).to.equal(true);
      expect(await judge('off', rel), `off ${rel}`).to.deep.include({
        follow: false,
        reason: 'symbolic links are not followed (--follow-symlinks off)',
      });
    }
    expect(await judge('owner', 'alias.txt')).to.deep.equal({ follow: true, real: join(root, 'real.txt') });
  });

  it('refuses a dangling link in owner and off (Apache: target not accessible)', async () => {
    expect(await judge('owner', 'dangling.txt')).to.deep.include({ follow: false, reason: 'its target cannot be reached' });
    expect((await judge('off', 'dangling.txt')).follow).to.equal(false);
    expect((await judge('on', 'dangling.txt')).follow).to.equal(true);
  });

  it('refuses in owner a link whose target has another owner (SymLinksIfOwnerMatch)', async function () {
    if (!isRoot) this.skip(); // chown to another uid needs root
    writeFileSync(join(root, 'theirs.txt'), 'theirs');
    chownSync(join(root, 'theirs.txt'), 65534, 65534);
    symlinkSync('theirs.txt', join(root, 'theirs-link.txt'));
    expect(await judge('owner', 'theirs-link.txt')).to.deep.equal({
      follow: false,
      link: join(root, 'theirs-link.txt'),
      reason: `its target ${join(root, 'theirs.txt')} is owned by uid 65534, the link by uid 0`,
    });
    expect((await judge('on', 'theirs-link.txt')).follow).to.equal(true);
  });

  it('catches a link swapped in between the check and the open (the opened file is not the one judged)', function () {
    if (process.platform !== 'linux') this.skip(); // /proc/self/fd
    const guard = new LinkGuard(root, 'owner');
    const file = join(root, 'inner', 'page.txt');
    const verdict = guard.checkSync(file);
    expect(verdict.follow).to.equal(true);
    // The race: the file becomes a link out of the root after the check.
    renameSync(file, join(root, 'inner', 'was.txt'));
    symlinkSync('/etc/passwd', file);
    const fd = openSync(file, 'r');
    try {
      expect(guard.openedAs(fd, file, verdict)).to.deep.include({ link: file });
      expect(() => guard.readFileSync(file, verdict)).to.throw(
        /Symbolic link not allowed or link target not accessible: .*changed between the check and the open/,
      );
    } finally {
      closeSync(fd);
    }
    // Unchanged, the same check passes.
    const plain = join(root, 'real.txt');
    expect(guard.readFileSync(plain, guard.checkSync(plain)).toString()).to.equal('real');
  });
});
