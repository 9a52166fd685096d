// Which symbolic links under a root (www/public, www/controllers) may be followed, as Apache's
// `Options FollowSymLinks` / `SymLinksIfOwnerMatch` and nginx's `disable_symlinks if_not_owner` decide it.
// `owner` (the default) follows a link only when its target resolves inside the same root and belongs to
// the link's owner; `on` follows every link; `off` none. Every component below the root is judged (a
// linked directory in the middle counts); the root itself may be a link, the operator's own choice.
//
// judgeLink() is the decision, without I/O. walk() asks for the file-system facts it needs one at a
// time, so the proxy (async, off its thread) and the host (sync, as it reads controllers) run one copy of
// the rule. A check is followed by an open; openedAs() then asks the kernel where the opened file really
// is (/proc/self/fd), so a link swapped in between the two is caught rather than followed.
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { lstat, open, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { FollowSymlinks } from './settings.ts';

/** What is known of a link and of where it leads. */
export interface LinkFacts {
  /** The link's own path and owner (lstat). */
  link: { path: string; uid: number };
  /** Its target, fully resolved, and the target's owner (stat); undefined when it cannot be reached. */
  target: { path: string; uid: number } | undefined;
}

export interface Refusal {
  /** The link refused (or the file, when it changed between check and open). */
  link: string;
  reason: string;
}

export type LinkVerdict =
  /** `real`: where the file resolved at the check; undefined when it does not exist (yet). */
  { follow: true; real: string | undefined } | ({ follow: false } & Refusal);

/** Apache's AH00037 text, so operators grep one phrase for both roots. */
export const LINK_REFUSED = 'Symbolic link not allowed or link target not accessible';

function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The decision for one link, from its facts alone: undefined to follow it, else why not. */
export function judgeLink(mode: FollowSymlinks, realRoot: string, { link, target }: LinkFacts): string | undefined {
  if (mode === 'on') return undefined;
  if (mode === 'off') return 'symbolic links are not followed (--follow-symlinks off)';
  if (target === undefined) return 'its target cannot be reached';
  if (!inside(target.path, realRoot)) return `its target ${target.path} is outside ${realRoot}`;
  if (target.uid !== link.uid) return `its target ${target.path} is owned by uid ${target.uid}, the link by uid ${link.uid}`;
  return undefined;
}

type Ask = { op: 'realpath'; path: string } | { op: 'lstat'; path: string } | { op: 'stat'; path: string };
/** realpath → the path; lstat, stat → owner and kind; undefined when the path cannot be reached. */
type Answer = string | { uid: number; link: boolean } | undefined;

/** The codes that mean "nothing (reachable) there": a missing file, a loop, a component that is no directory. */
const UNREACHABLE = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES', 'ENAMETOOLONG']);

function unreachable(err: unknown): undefined {
  if (UNREACHABLE.has((err as NodeJS.ErrnoException).code ?? '')) return undefined;
  throw err;
}

export class LinkGuard {
  readonly realRoot: string;

  constructor(
    readonly root: string,
    readonly mode: FollowSymlinks,
  ) {
    // Links are judged against where the root really is (it may itself be a link).
    this.realRoot = (() => {
      try {
        return realpathSync.native(root);
      } catch {
        return resolve(root);
      }
    })();
  }

  /** Where `file` is when no link is crossed below the root; undefined when it is not under the root. */
  private lexical(file: string): string | undefined {
    const rel = relative(this.root, file);
    if (rel.startsWith('..') || isAbsolute(rel)) return undefined;
    return join(this.realRoot, rel);
  }

  /** The rule over every component of `file` below the root, asking for one fact at a time. */
  private *walk(file: string): Generator<Ask, LinkVerdict, Answer> {
    const lexical = this.lexical(file);
    // Not under the root: send and the controller name refuse such paths before any open.
    if (this.mode === 'on' || lexical === undefined) return { follow: true, real: undefined };
    const real = (yield { op: 'realpath', path: file }) as string | undefined;
    // The common case: one realpath, equal to the path itself, so no component is a link.
    if (real === lexical) return { follow: true, real };
    let prefix = this.root;
    for (const segment of relative(this.root, file).split(sep)) {
      prefix = join(prefix, segment);
      const own = (yield { op: 'lstat', path: prefix }) as { uid: number; link: boolean } | undefined;
      if (own === undefined) break; // missing from here on: a 404, nothing is followed
      if (!own.link) continue;
      const targetPath = (yield { op: 'realpath', path: prefix }) as string | undefined;
      const targetStats = targetPath === undefined ? undefined : ((yield { op: 'stat', path: targetPath }) as { uid: number } | undefined);
      const target = targetPath !== undefined && targetStats !== undefined ? { path: targetPath, uid: targetStats.uid } : undefined;
      const reason = judgeLink(this.mode, this.realRoot, { link: { path: prefix, uid: own.uid }, target });
      if (reason !== undefined) return { follow: false, link: prefix, reason };
    }
    return { follow: true, real };
  }

  /** Judges `file` off the thread (the proxy). */
  async check(file: string): Promise<LinkVerdict> {
    const walk = this.walk(file);
    let step = walk.next();
    while (!step.done) {
      const ask = step.value;
      let answer: Answer;
      if (ask.op === 'realpath') answer = await realpath(ask.path).catch(unreachable);
      else {
        const stats = await (ask.op === 'lstat' ? lstat(ask.path) : stat(ask.path)).catch(unreachable);
        answer = stats && { uid: stats.uid, link: stats.isSymbolicLink() };
      }
      step = walk.next(answer);
    }
    return step.value;
  }

  /** Judges `file` on the calling thread (the host, which reads a controller synchronously). */
  checkSync(file: string): LinkVerdict {
    const walk = this.walk(file);
    let step = walk.next();
    while (!step.done) {
      const ask = step.value;
      let answer: Answer;
      try {
        if (ask.op === 'realpath') answer = realpathSync.native(ask.path);
        else {
          const stats = ask.op === 'lstat' ? lstatSync(ask.path) : statSync(ask.path);
          answer = { uid: stats.uid, link: stats.isSymbolicLink() };
        }
      } catch (err) {
        answer = unreachable(err);
      }
      step = walk.next(answer);
    }
    return step.value;
  }

  /**
   * Whether the file open on `fd` (opened by `file` after `verdict` allowed it) is the one judged: the
   * kernel's own name for it must be where the check resolved it. Linux only (/proc); elsewhere the window
   * between check and open stays, as in Apache.
   */
  openedAs(fd: number, file: string, verdict: LinkVerdict): Refusal | undefined {
    if (this.mode === 'on' || !verdict.follow) return undefined;
    let opened: string;
    try {
      opened = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return undefined;
    }
    const expected = verdict.real ?? this.lexical(file);
    if (expected === undefined || opened === expected) return undefined;
    return { link: file, reason: `it changed between the check and the open, which reached ${opened}` };
  }

  /** A file's bytes, read only if every link to it may be followed and it was not swapped meanwhile. */
  async readFile(file: string): Promise<Buffer> {
    const verdict = await this.check(file);
    if (!verdict.follow) throw new LinkRefusedError(verdict);
    const handle = await open(file, 'r');
    try {
      const swapped = this.openedAs(handle.fd, file, verdict);
      if (swapped) throw new LinkRefusedError(swapped);
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  /**
   * The bytes of `file`, which `verdict` allowed, read on the calling thread (the host). Opened with
   * O_NONBLOCK and checked with fstat, so a FIFO swapped in after the caller's stat cannot block the thread.
   */
  readFileSync(file: string, verdict: LinkVerdict): Buffer {
    if (!verdict.follow) throw new LinkRefusedError(verdict);
    const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const swapped = this.openedAs(fd, file, verdict);
      if (swapped) throw new LinkRefusedError(swapped);
      if (!fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file`);
      return readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/** A link the guard refused, as an error for the code paths that throw. */
export class LinkRefusedError extends Error {
  readonly code = 'EXTQS_LINK_REFUSED';
  readonly link: string;
  readonly reason: string;
  constructor({ link, reason }: Refusal) {
    super(`${LINK_REFUSED}: ${link} (${reason})`);
    this.name = 'LinkRefusedError';
    this.link = link;
    this.reason = reason;
  }
}
