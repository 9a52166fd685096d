// The one line each process prints on stdout when it accepts requests (docs/design.md §6).
const PREFIX = 'listening on ';

export function readyLine(url: string): string {
  return `${PREFIX}${url}`;
}

/** The URL of a ready line, or undefined for any other line. */
export function parseReadyLine(line: string): string | undefined {
  return line.startsWith(PREFIX) ? line.slice(PREFIX.length).trim() : undefined;
}
