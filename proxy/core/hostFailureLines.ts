// The error.log lines that relay what the host already said of a controller's failure: mod_fcgid's
// `stderr:` lines (the host's fatal error, P5) and Apache's `End of script output before headers` (P1).
// error.log keeps them as Apache wrote them; `extqs dev`'s terminal, where the host's own line is already
// shown with its code frame, leaves them out so a failure is shown once (docs/design.md §7).
import type { ErrorEntry } from '../../common/logFormat.ts';

/** mod_fcgid's prefix for a line the application wrote on stderr. */
export const HOST_STDERR_PREFIX = 'mod_fcgid: stderr: ';

/** Apache's words for a script that gave no header (util_script.c). */
export const END_OF_SCRIPT_OUTPUT = 'End of script output before headers: ';

/** Whether `entry` repeats a failure the host logged itself (or the proxy logged just before, for a broken read). */
export function repeatsTheHost(entry: Pick<ErrorEntry, 'module' | 'message'>): boolean {
  return (
    (entry.module === 'fcgid' && entry.message.startsWith(HOST_STDERR_PREFIX)) ||
    (entry.module === 'core' && entry.message.startsWith(END_OF_SCRIPT_OUTPUT))
  );
}
