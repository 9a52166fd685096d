// What a controller may be called: the one rule the proxy (which forwards only a name some file can have) and
// the host (which refuses any other, for a proxy that does not check) both apply.
import { CONTROLLER_PREFIX } from './protocol.ts';

export const CONTROLLER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Whether a path under `/External/` names a controller that can exist: its name, from the prefix to the first
 * `/` as sent, decoded, matches CONTROLLER_NAME. An escape that does not decode names none.
 */
export function namesPossibleController(path: string): boolean {
  const rest = path.slice(CONTROLLER_PREFIX.length);
  const slash = rest.indexOf('/');
  const rawName = slash === -1 ? rest : rest.slice(0, slash);
  try {
    return CONTROLLER_NAME.test(decodeURIComponent(rawName));
  } catch {
    return false;
  }
}
