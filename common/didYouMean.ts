// "Did you mean …?" for a mistyped flag or settings name: the nearest known names by edit distance,
// else the names the word begins (`--max-exec` → --max-execution-time).

/**
 * Levenshtein distance counting a swap of two neighbours as one edit (optimal string alignment), so
 * `prot` is one edit from `port`, as a typist sees it.
 */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** Two edits turn most short words into each other (`bogus` → `logs`): short words get one. */
const maxDistance = (word: string) => (word.length < 6 ? 1 : 2);
/** A shorter prefix (`--p`) names too many settings to be a suggestion. */
const MIN_PREFIX = 3;

/** The known names `word` most likely meant, nearest first; none when nothing is close. */
export function suggestions(word: string, known: readonly string[]): string[] {
  const near = known.map((name) => ({ name, distance: editDistance(word, name) })).filter(({ distance }) => distance <= maxDistance(word));
  if (near.length > 0) {
    const best = Math.min(...near.map(({ distance }) => distance));
    return near.filter(({ distance }) => distance === best).map(({ name }) => name);
  }
  return word.length >= MIN_PREFIX ? known.filter((name) => name.startsWith(word)) : [];
}

/** ` (did you mean --port?)` (or `--a or --b?`), or nothing; `prefix` is put before each name shown. */
export function didYouMean(word: string, known: readonly string[], prefix = ''): string {
  const names = suggestions(word, known).map((name) => `${prefix}${name}`);
  return names.length === 0 ? '' : ` (did you mean ${names.join(' or ')}?)`;
}
