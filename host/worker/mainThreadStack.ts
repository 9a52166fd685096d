// The JavaScript stack of the worker's own thread, taken from its watchdog thread, which runs while that
// thread is blocked: an inspector session connected to the main thread sends Debugger.pause, which V8
// handles at the next interrupt check of the running JavaScript (a loop's back edge, a call), reads the
// paused frames, and resumes. The session lives only for one stack: with the debugger enabled V8 keeps
// debug information, and a session still connected at exit makes Node wait for it (docs/design.md §8).
import { Session } from 'node:inspector';
import type { PausedFrame } from './slowlog.ts';

/** The frames of the worker's thread, or undefined if it did not pause within `timeoutMs` (in native code). */
export async function mainThreadStack(timeoutMs: number): Promise<PausedFrame[] | undefined> {
  const session = new Session();
  session.connectToMainThread();
  const post = (method: 'Debugger.enable' | 'Debugger.pause' | 'Debugger.resume') =>
    new Promise<void>((resolve, reject) => session.post(method, (err) => (err ? reject(err) : resolve())));
  const scripts = new Map<string, string>();
  session.on('Debugger.scriptParsed', ({ params }) => scripts.set(params.scriptId, params.url));
  const paused = new Promise<PausedFrame[]>((resolve) =>
    session.once('Debugger.paused', ({ params }) =>
      resolve(
        params.callFrames.map((frame) => ({
          functionName: frame.functionName,
          url: frame.url || (scripts.get(frame.location.scriptId) ?? ''),
          lineNumber: frame.location.lineNumber,
          columnNumber: frame.location.columnNumber ?? 0,
        })),
      ),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  try {
    const frames = await Promise.race([
      post('Debugger.enable')
        .then(() => post('Debugger.pause'))
        .then(() => paused),
      timedOut,
    ]);
    if (frames) await post('Debugger.resume');
    return frames;
  } finally {
    clearTimeout(timer);
    // Disconnecting disables the debugger: a pause still pending is dropped with it.
    session.disconnect();
  }
}
