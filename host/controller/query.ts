// PHP's $_GET, $_POST (urlencoded), $_COOKIE and the shape of $_FILES, as php_default_treat_data(),
// add_post_vars() and php_register_variable_ex() build them (main/php_variables.c). For the query:
// `&`-separated, empty pieces skipped, a name without `=` gets '', the last duplicate wins, leading spaces
// dropped, ` ` and `.` in the base name become `_`, `a[]=` appends (so does `a[ ]=`), `a[k]=` nests
// (past 64 levels the whole variable is dropped), an unclosed `[` becomes `_` with ` `, `.` and `[` after
// it too (PHP 8), and past max_input_vars the rest is dropped with PHP's warning.
import type { QueryValue } from '../../common/controller.ts';
import { nullObject } from '../../common/nullObject.ts';

export const MAX_INPUT_VARS = 1000;
const MAX_NESTING_LEVEL = 64;

export interface ParsedQuery {
  query: Record<string, QueryValue>;
  /** PHP's warnings for this input, e.g. the max_input_vars one. */
  warnings: string[];
}

/** A leaf of a PHP array: strings from the request, numbers in $_FILES (error, size). */
type Leaf = string | number;

/** An ordered PHP array: string keys, integer-like keys normalised, and PHP's next free index. */
class PhpArray {
  readonly entries = new Map<string, PhpArray | Leaf>();
  private nextIndex = 0;

  private static key(raw: string): string {
    // zend_symtable: a canonical decimal integer string is an integer key.
    if (/^(0|-?[1-9][0-9]{0,15})$/.test(raw)) {
      const n = Number(raw);
      if (Number.isSafeInteger(n)) return String(n);
    }
    return raw;
  }

  private noteKey(key: string): void {
    const n = Number(key);
    if (Number.isSafeInteger(n) && String(n) === key && n >= this.nextIndex) this.nextIndex = n + 1;
  }

  append(value: PhpArray | Leaf): void {
    const key = String(this.nextIndex);
    this.entries.set(key, value);
    this.nextIndex += 1;
  }

  delete(rawKey: string): void {
    this.entries.delete(PhpArray.key(rawKey));
  }

  has(rawKey: string): boolean {
    return this.entries.has(PhpArray.key(rawKey));
  }

  set(rawKey: string, value: PhpArray | Leaf): void {
    const key = PhpArray.key(rawKey);
    this.entries.set(key, value);
    this.noteKey(key);
  }

  /** The array under `rawKey`, replacing a scalar there (as PHP does); `undefined` key appends. */
  child(rawKey: string | undefined): PhpArray {
    if (rawKey === undefined) {
      const fresh = new PhpArray();
      this.append(fresh);
      return fresh;
    }
    const existing = this.entries.get(PhpArray.key(rawKey));
    if (existing instanceof PhpArray) return existing;
    const fresh = new PhpArray();
    this.set(rawKey, fresh);
    return fresh;
  }

  /** A list when the keys are exactly 0..n-1 in order (PHP's array_is_list), otherwise an object. */
  toValue<T = QueryValue>(): T {
    let i = 0;
    let isList = true;
    for (const key of this.entries.keys()) {
      if (key !== String(i++)) {
        isList = false;
        break;
      }
    }
    if (isList) return [...this.entries.values()].map((v) => (v instanceof PhpArray ? v.toValue() : v)) as T;
    return this.toObject() as T;
  }

  toObject<T = QueryValue>(): Record<string, T> {
    // A null prototype: `__proto__` or `constructor` in a query are plain keys, never prototype writes.
    const out = nullObject<T>();
    for (const [key, value] of this.entries) out[key] = (value instanceof PhpArray ? value.toValue() : value) as T;
    return out;
  }
}

/**
 * How a decoded name or value's bytes become a string: `utf8` (a byte that is not UTF-8 becomes U+FFFD), or
 * `latin1`, one character a byte, so PHP's bytes can be had back (`Buffer.from(value, 'latin1')`).
 */
export type QueryEncoding = 'utf8' | 'latin1';

/** PHP's urldecode(): `+` is a space, valid %XX escapes are bytes, anything else stays as written. */
export function phpUrlDecode(raw: string, encoding: QueryEncoding = 'utf8'): string {
  if (!/[+%]/.test(raw)) return raw;
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i);
    if (ch === 0x2b) bytes.push(0x20);
    else if (ch === 0x25 && /^[0-9A-Fa-f]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (ch < 0x80) bytes.push(ch);
    else bytes.push(...Buffer.from(raw[i], 'utf8'));
  }
  return Buffer.from(bytes).toString(encoding);
}

/**
 * php_register_variable_ex(): stores one decoded name/value pair into `target`. `firstWins`: $_COOKIE
 * keeps the first of two plain top-level names (the more specific path comes first, RFC 2965).
 */
function register(target: PhpArray, decodedName: string, value: Leaf, firstWins = false): void {
  // A C string ends at NUL; leading spaces are ignored.
  const name = decodedName.split('\0', 1)[0].replace(/^ +/, '');
  let bracket = -1;
  let base = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name[i];
    if (ch === '[') {
      bracket = i;
      break;
    }
    base += ch === ' ' || ch === '.' ? '_' : ch;
  }
  if (base === '') return;
  if (bracket === -1) {
    if (!(firstWins && target.has(base))) target.set(base, value);
    return;
  }

  // Walk `[k1][k2]…`: each closed pair descends one level.
  let container = target;
  let key: string | undefined = base;
  let pos = bracket;
  for (let level = 1; ; level++) {
    if (level > MAX_NESTING_LEVEL) {
      target.delete(base); // PHP drops the whole variable, earlier values included
      return;
    }
    // PHP skips one isspace() character after `[`: `a[ ]` appends like `a[]` (but `a[ x]` keeps the space).
    const skip = /[ \t\n\v\f\r]/.test(name[pos + 1] ?? '') ? 1 : 0;
    const close = name.indexOf(']', pos + 1 + skip);
    if (close === -1) {
      if (level === 1) {
        // Not an index after all: the `[` becomes `_`, and so do ` `, `.` and `[` after it.
        container.set(base + '_' + name.slice(pos + 1).replace(/[ .[]/g, '_'), value);
      } else if (key === undefined) container.append(value);
      else container.set(key, value);
      return;
    }
    container = container.child(key);
    key = close === pos + 1 + skip ? undefined : name.slice(pos + 1, close);
    pos = close + 1;
    if (name[pos] !== '[') break; // anything after the last `]` is ignored
  }
  if (key === undefined) container.append(value);
  else container.set(key, value);
}

const inputVarsWarning = (max: number) =>
  `PHP Warning:  Unknown: Input variables exceeded ${max}. To increase the limit change max_input_vars in php.ini.`;

/** Parses a raw query string (without `?`) into PHP's $_GET, its bytes read as `encoding`. Never throws. */
export function parsePhpQuery(raw: string, maxInputVars = MAX_INPUT_VARS, encoding: QueryEncoding = 'utf8'): ParsedQuery {
  return plainQuery(raw, maxInputVars, encoding) ?? arrayQuery(raw, maxInputVars, encoding);
}

/** A name register() stores as it is, at the top level: no NUL, space, dot or `[`. */
const PLAIN_NAME = /^[^\0 .[]+$/;

/**
 * The query nearly every request has (`sn=123&no=1`): every name plain and no more than maxInputVars, stored
 * straight into the result, which is what arrayQuery() makes of it at a third of the cost. Undefined otherwise.
 */
function plainQuery(raw: string, maxInputVars: number, encoding: QueryEncoding): ParsedQuery | undefined {
  const query = nullObject<QueryValue>();
  let count = 0;
  for (const piece of raw.split('&')) {
    if (piece === '') continue;
    if (++count > maxInputVars) return undefined;
    const eq = piece.indexOf('=');
    const name = phpUrlDecode(eq === -1 ? piece : piece.slice(0, eq), encoding);
    if (!PLAIN_NAME.test(name)) return undefined;
    // As a Map and the object made from it: the last duplicate wins, in the first one's place.
    query[name] = eq === -1 ? '' : phpUrlDecode(piece.slice(eq + 1), encoding);
  }
  return { query, warnings: [] };
}

/** Any query, through PhpArray, as php_default_treat_data() and php_register_variable_ex() build it. */
export function arrayQuery(raw: string, maxInputVars = MAX_INPUT_VARS, encoding: QueryEncoding = 'utf8'): ParsedQuery {
  const root = new PhpArray();
  const warnings: string[] = [];
  let count = 0;
  for (const piece of raw.split('&')) {
    if (piece === '') continue;
    if (++count > maxInputVars) {
      warnings.push(inputVarsWarning(maxInputVars));
      break;
    }
    const eq = piece.indexOf('=');
    const name = phpUrlDecode(eq === -1 ? piece : piece.slice(0, eq), encoding);
    const value = eq === -1 ? '' : phpUrlDecode(piece.slice(eq + 1), encoding);
    register(root, name, value);
  }
  return { query: root.toObject(), warnings };
}

/**
 * An application/x-www-form-urlencoded body into PHP's $_POST: the query's rules, except that
 * add_post_vars() counts a variable after storing it, so max_input_vars + 1 of them are kept.
 */
export function parsePhpForm(raw: string, maxInputVars = MAX_INPUT_VARS): ParsedQuery {
  const root = new PhpArray();
  const warnings: string[] = [];
  let count = 0;
  for (const piece of raw.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    register(root, phpUrlDecode(eq === -1 ? piece : piece.slice(0, eq)), eq === -1 ? '' : phpUrlDecode(piece.slice(eq + 1)));
    if (++count > maxInputVars) {
      warnings.push(inputVarsWarning(maxInputVars));
      break;
    }
  }
  return { query: root.toObject(), warnings };
}

/** PHP's rawurldecode(): only %XX escapes; `+` stays. */
function phpRawUrlDecode(raw: string): string {
  return raw.includes('%') ? phpUrlDecode(raw.replace(/\+/g, '%2B')) : raw;
}

/**
 * The Cookie header into PHP's $_COOKIE (PHP 8.2): `;`-separated, leading spaces dropped, names taken as
 * written (not decoded since CVE-2022-31629), values raw-url-decoded, the first of a duplicate name kept.
 */
export function parsePhpCookies(header: string | undefined, maxInputVars = MAX_INPUT_VARS): ParsedQuery {
  const root = new PhpArray();
  const warnings: string[] = [];
  if (!header) return { query: root.toObject(), warnings };
  let count = 0;
  for (const piece of header.split(';')) {
    const cookie = piece.replace(/^[ \t\n\v\f\r]+/, '');
    const eq = cookie.indexOf('=');
    if (cookie === '' || eq === 0) continue;
    if (++count > maxInputVars) {
      warnings.push(inputVarsWarning(maxInputVars));
      break;
    }
    register(root, eq === -1 ? cookie : cookie.slice(0, eq), eq === -1 ? '' : phpRawUrlDecode(cookie.slice(eq + 1)), true);
  }
  return { query: root.toObject(), warnings };
}

/** Variables registered one by one under PHP's name rules, e.g. $_POST from multipart fields and $_FILES. */
export class PhpVariables {
  private readonly root = new PhpArray();

  register(name: string, value: Leaf): void {
    register(this.root, name, value);
  }

  toObject<T = QueryValue>(): Record<string, T> {
    return this.root.toObject<T>();
  }
}
