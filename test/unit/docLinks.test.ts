// Every relative link in the repository's markdown (README.md, docs/, any other .md outside node_modules)
// reaches an existing file or directory, and every #anchor an existing heading of its target, with GitHub's
// slugs. Network links (http:, https:, mailto:, //host) are not checked: a test must not depend on the network.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Not the project's text: dependencies, compiled output, git's own files, bench output, logs.
const SKIPPED_DIRS = new Set(['node_modules', '.git', 'build', 'logs', 'results']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : markdownFiles(path);
    return entry.isFile() && entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks, which hold no links or headings. */
function withoutFences(text: string): string {
  return text.replace(/^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, '');
}

/** GitHub's heading id: the heading's text, lowercase, punctuation dropped but for '-' and '_', spaces to '-'. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link counts by its text
    .replace(/[`*]/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a document's headings make; a repeated heading gets -1, -2, … as on GitHub. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const ids = new Set<string>();
  for (const match of withoutFences(readFileSync(file, 'utf8')).matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const base = slug(match[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    ids.add(count === 0 ? base : `${base}-${count}`);
  }
  return ids;
}

/** Inline links and images `[text](target)` and reference definitions `[label]: target`. */
function links(file: string): string[] {
  const text = withoutFences(readFileSync(file, 'utf8')).replace(/`+[^`\n]*`+/g, ''); // nor do code spans
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]);
  return [...inline, ...definitions];
}

/** What is wrong with one link from `file`, or undefined when it resolves. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined; // network: not checked
  const [pathPart, anchor] = target.split('#', 2);
  const path = decodeURIComponent(pathPart);
  const destination = path === '' ? file : resolve(dirname(file), path);
  if (!existsSync(destination)) return `${target}: no file ${relative(ROOT, destination)}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!statSync(destination).isFile() || !destination.endsWith('.md')) return `${target}: an anchor into a file that is not markdown`;
  return anchors(destination).has(decodeURIComponent(anchor))
    ? undefined
    : `${target}: no heading #${anchor} in ${relative(ROOT, destination)}`;
}

// The folders a repository path starts with, and the files at the root that design.md may name.
const TOP_FOLDERS = ['bench', 'bin', 'common', 'deploy', 'docs', 'examples', 'host', 'launcher', 'proxy', 'test', 'tools', 'www'];
const ROOT_FILES = /^(package\.json|tsconfig[\w.]*\.json|stryker\.config\.json|eslint\.config\.js|README\.md)$/;

/**
 * The repository paths a document names in code spans (`proxy/forward/`, `common/leastBusy.ts`) and the tests it names
 * by suite and file (`e2e/observed` is test/e2e/observed.test.ts), each with the files that would satisfy it.
 * Spans with placeholders (`<Name>`, `*`, `…`) name no one file and are left out.
 */
function namedPaths(markdown: string): { named: string; candidates: string[] }[] {
  const spans = [...withoutFences(markdown).matchAll(/`([^`\n]+)`/g)].map((match) => match[1].trim());
  const named: { named: string; candidates: string[] }[] = [];
  for (const span of new Set(spans)) {
    if (/[<>*…$ ]/.test(span)) continue;
    const suite = /^(unit|e2e|reliability)\/([\w.]+)$/.exec(span);
    if (suite) {
      const base = join('test', suite[1], suite[2]);
      named.push({ named: span, candidates: [`${base}.test.ts`, `${base}.slow.test.ts`, `${base}.ts`] });
    } else if (TOP_FOLDERS.some((folder) => span.startsWith(`${folder}/`)) || ROOT_FILES.test(span)) {
      named.push({ named: span, candidates: [span.replace(/\/$/, '')] });
    }
  }
  return named;
}

/** The paths of `namedPaths` that exist under `root` in none of their forms. */
function missingPaths(markdown: string, root: string): string[] {
  return namedPaths(markdown)
    .filter(({ candidates }) => !candidates.some((candidate) => existsSync(join(root, candidate))))
    .map(({ named }) => named);
}

describe('paths named by docs/design.md', () => {
  it('each exist in the repository: a file or folder, or a test by suite and file', () => {
    expect(missingPaths(readFileSync(join(ROOT, 'docs/design.md'), 'utf8'), ROOT)).to.deep.equal([]);
  });

  it('are found in code spans, and a path that does not exist is reported', () => {
    const text =
      'See `proxy/`, `common/leastBusy.ts`, `e2e/observed`, `proxy/nowhere/`, `unit/noSuchTest` and `www/controllers/<Name>.ts`.';
    expect(namedPaths(text).map(({ named }) => named)).to.deep.equal([
      'proxy/',
      'common/leastBusy.ts',
      'e2e/observed',
      'proxy/nowhere/',
      'unit/noSuchTest',
    ]);
    expect(missingPaths(text, ROOT)).to.deep.equal(['proxy/nowhere/', 'unit/noSuchTest']);
  });
});

describe('links in the markdown documents', () => {
  const files = markdownFiles(ROOT);

  it('finds README.md and the documents under docs/', () => {
    const names = files.map((file) => relative(ROOT, file));
    expect(names).to.include.members(['README.md', 'docs/design.md', 'docs/configuration.md']);
  });

  it('resolve to an existing file and, for an #anchor, an existing heading', () => {
    const broken = files.flatMap((file) =>
      links(file)
        .map((target) => brokenLink(file, target))
        .filter((problem) => problem !== undefined)
        .map((problem) => `${relative(ROOT, file)}: ${problem}`),
    );
    expect(broken).to.deep.equal([]);
  });

  it("make GitHub's heading ids", () => {
    expect(slug('extqs — the External Query Service')).to.equal('extqs--the-external-query-service');
    expect(slug('3.7 Compression')).to.equal('37-compression');
    expect(slug('Install as a service (systemd)')).to.equal('install-as-a-service-systemd');
    expect(slug('`extqs dev` and max_requests')).to.equal('extqs-dev-and-max_requests');
  });
});
