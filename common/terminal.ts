// What `extqs dev` writes on the developer's terminal (stderr) beside the log files: every error.log and
// host.log event in one short line, coloured by level, and under a controller's failure the lines of its
// source around the failing one. Pure functions, but for terminalWriter(), which writes.
import { readFileSync } from 'node:fs';
import type { LogLevel } from './logFormat.ts';

/**
 * Whether to colour, as Node decides for its own output: FORCE_COLOR wins (`0` or `false` turn colour off),
 * then NO_COLOR or NODE_DISABLE_COLORS turn it off (https://no-color.org), then a terminal gets colour
 * unless TERM is `dumb`.
 */
export function colourWanted(env: NodeJS.ProcessEnv, isTTY: boolean): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  if (env.NO_COLOR !== undefined || env.NODE_DISABLE_COLORS !== undefined) return false;
  return isTTY && env.TERM !== 'dumb';
}

const SGR = { reset: 0, bold: 1, dim: 2, red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90 } as const;
type Style = keyof typeof SGR;

/** Wraps `text` in an ANSI style, or leaves it as it is without colour. */
function paint(colour: boolean, style: Style, text: string): string {
  return colour ? `\u001b[${SGR[style]}m${text}\u001b[${SGR.reset}m` : text;
}

function levelStyle(level: LogLevel): Style {
  if (level === 'emerg' || level === 'alert' || level === 'crit' || level === 'error') return 'red';
  if (level === 'warn') return 'yellow';
  if (level === 'notice') return 'blue';
  if (level === 'info') return 'green';
  return 'gray';
}

export interface TerminalEntry {
  time: Date;
  level: LogLevel;
  /** `host`, or the proxy's module: `proxy`, `core`, `fcgid`, … */
  source: string;
  requestId?: string;
  client?: string;
  message: string;
}

/** A controller's console line starts with its name in brackets (host/worker/consoleCapture.ts). */
const CONTROLLER_TAG = /^\[([A-Za-z_][A-Za-z0-9_]*|-)\] /;

const pad2 = (n: number) => String(n).padStart(2, '0');

/** `14:02:03.456 error host [req 1f…] [Latest] message`: local time, level, where, request id, controller. */
export function terminalLine(entry: TerminalEntry, colour: boolean): string {
  const t = entry.time;
  const time = `${pad2(t.getHours())}:${pad2(t.getMinutes())}:${pad2(t.getSeconds())}.${String(t.getMilliseconds()).padStart(3, '0')}`;
  const level = paint(colour, levelStyle(entry.level), entry.level.padEnd(6));
  const id = entry.requestId ? ` ${paint(colour, 'magenta', `[req ${entry.requestId}]`)}` : '';
  const client = entry.client ? ` [client ${entry.client}]` : '';
  const message = entry.message.replace(CONTROLLER_TAG, (tag) => paint(colour, 'cyan', tag.trimEnd()) + ' ');
  return `${paint(colour, 'dim', time)} ${level} ${paint(colour, 'bold', entry.source)}${id}${client} ${message.replace(/\r?\n/g, '\n    ')}`;
}

export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The first `<dir>/<Name>.ts:line:column` (or `.js`) in a message: where a parse error points, or the
 * first frame of a stack inside a controller (stacks are mapped to the source before they are logged).
 */
export function controllerLocation(message: string, controllersDir: string): SourceLocation | undefined {
  const match = new RegExp(`(${escapeRegExp(controllersDir)}/[A-Za-z_][A-Za-z0-9_]*\\.(?:ts|js)):(\\d+):(\\d+)`).exec(message);
  return match ? { file: match[1], line: Number(match[2]), column: Number(match[3]) } : undefined;
}

/** Lines of context on each side of the failing one. */
const CONTEXT_LINES = 2;

/**
 * The source lines around `line` (1-based), the failing one marked `>` with a caret under `column`
 * (1-based), as Babel and Vite show them; '' when the line is not in the source.
 */
export function codeFrame(source: string, line: number, column: number, colour = false): string {
  const lines = source.split(/\r?\n/);
  if (line < 1 || line > lines.length) return '';
  const first = Math.max(1, line - CONTEXT_LINES);
  const last = Math.min(lines.length, line + CONTEXT_LINES);
  const width = String(last).length;
  const out: string[] = [];
  for (let n = first; n <= last; n += 1) {
    const gutter = `${n === line ? '>' : ' '} ${String(n).padStart(width)} |`;
    const text = lines[n - 1].replace(/\t/g, '  ');
    out.push(n === line ? `${paint(colour, 'red', gutter)} ${text}` : paint(colour, 'dim', `${gutter} ${text}`));
    if (n === line) {
      // Tabs before the column were widened to two spaces above; the caret follows them.
      const before = lines[n - 1].slice(0, Math.max(0, column - 1)).replace(/\t/g, '  ');
      out.push(`  ${' '.repeat(width)} ${paint(colour, 'dim', '|')} ${' '.repeat(before.length)}${paint(colour, 'red', '^')}`);
    }
  }
  return out.join('\n');
}

/** The frame for a message that points into a controller, read from the file as it is now ('' when none). */
export function frameFor(message: string, controllersDir: string, colour: boolean): string {
  const where = controllerLocation(message, controllersDir);
  if (!where) return '';
  try {
    return codeFrame(readFileSync(where.file, 'utf8'), where.line, where.column, colour);
  } catch {
    return '';
  }
}

/**
 * Writes entries on stderr for `extqs dev`. `controllersDir` (the host's) adds a code frame under an error
 * pointing into a controller. stderr is synchronous on Linux for files, pipes and terminals: only the
 * writing process (the host's primary, the proxy) waits, never a worker running controllers.
 */
export function terminalWriter(controllersDir?: string, stream: NodeJS.WriteStream = process.stderr): (entry: TerminalEntry) => void {
  const colour = colourWanted(process.env, stream.isTTY === true);
  return (entry) => {
    const frame = controllersDir && entry.level === 'error' ? frameFor(entry.message, controllersDir, colour) : '';
    stream.write(`${terminalLine(entry, colour)}\n${frame ? `${frame}\n` : ''}`);
  };
}
