// Which controller a request names. Pure: decides from the URL alone, touches no file.
import { CONTROLLER_PREFIX } from '../common/protocol.ts';

export const CONTROLLER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type ControllerRoute =
  { kind: 'controller'; name: string; path: string; rawQuery: string } | { kind: 'invalid'; name: string; path: string; rawQuery: string };

/** Splits `/External/<Name>?<query>`; a name that is not an identifier is `invalid` (never a path). */
export function routeController(url: string): ControllerRoute {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const rawQuery = q === -1 ? '' : url.slice(q + 1);
  const rawName = path.startsWith(CONTROLLER_PREFIX) ? path.slice(CONTROLLER_PREFIX.length) : path;
  let name: string;
  try {
    name = decodeURIComponent(rawName);
  } catch {
    return { kind: 'invalid', name: rawName, path, rawQuery };
  }
  return { kind: CONTROLLER_NAME.test(name) ? 'controller' : 'invalid', name, path, rawQuery };
}
