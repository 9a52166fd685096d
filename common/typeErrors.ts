// `extqs dev`'s type errors as they stand: the launcher's type-check thread (launcher/typeWatch.ts) writes
// them after each check into a file of the launcher's private directory, and a host worker reads it when
// it shows a controller's error page (host/controller/devErrorPage.ts). A file, read when a page is made, needs no
// message through the pool and is never stale.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';

export interface TypeError {
  /** Absolute path, as TypeScript names it. */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  message: string;
  /** The source lines around it, uncoloured (common/terminal.ts's codeFrame). */
  frame: string;
}

/** `file:line:column message`, as `extqs check` and tsc place an error. */
export function typeErrorText(error: TypeError): string {
  return `${error.file}:${error.line}:${error.column} ${error.message}`;
}

/** Replaces the file whole (a rename), so a reader never sees half of it. */
export function writeTypeErrors(path: string, errors: readonly TypeError[]): void {
  writeFileSync(`${path}.new`, JSON.stringify(errors));
  renameSync(`${path}.new`, path);
}

/** The errors in `files`; none before the first check has written the file. */
export function typeErrorsIn(path: string, files: readonly string[]): TypeError[] {
  let errors: TypeError[];
  try {
    errors = JSON.parse(readFileSync(path, 'utf8')) as TypeError[];
  } catch {
    return [];
  }
  return errors.filter((error) => files.includes(error.file));
}
