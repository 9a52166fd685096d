// The one line each process prints on stdout when it accepts requests (docs/design.md §9).
const PREFIX = 'listening on ';

/** `listening on URL [URL…]`: the proxy with HTTPS names its plain listener first, then the TLS one. */
export function readyLine(...urls: string[]): string {
  return `${PREFIX}${urls.join(' ')}`;
}

/** The first URL of a ready line, or undefined for any other line. */
export function parseReadyLine(line: string): string | undefined {
  return parseReadyUrls(line)?.[0];
}

/** Every URL of a ready line, or undefined for any other line. */
export function parseReadyUrls(line: string): string[] | undefined {
  return line.startsWith(PREFIX) ? line.slice(PREFIX.length).trim().split(/\s+/) : undefined;
}
