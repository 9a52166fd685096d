// Which controller a request names. Pure: decides from the URL alone, touches no file.
import { CONTROLLER_NAME } from '../../common/controllerName.ts';
import { CONTROLLER_PREFIX } from '../../common/protocol.ts';

interface RouteParts {
  name: string;
  /** What follows the name, decoded, as PHP's PATH_INFO: `/x/y` for `/External/Latest/x/y`, '' for none. */
  pathInfo: string;
  path: string;
  rawQuery: string;
}

export type ControllerRoute = ({ kind: 'controller' } & RouteParts) | ({ kind: 'invalid' } & RouteParts);

/**
 * Splits `/External/<Name>[/<path info>]?<query>`. The name ends at the first `/` as sent (an encoded
 * `%2f` stays inside it); a name that is not an identifier, or an escape that does not decode, is
 * `invalid` (never a path).
 */
export function routeController(url: string): ControllerRoute {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const rawQuery = q === -1 ? '' : url.slice(q + 1);
  const underPrefix = path.startsWith(CONTROLLER_PREFIX);
  const rest = underPrefix ? path.slice(CONTROLLER_PREFIX.length) : path;
  const slash = underPrefix ? rest.indexOf('/') : -1;
  const rawName = slash === -1 ? rest : rest.slice(0, slash);
  const rawPathInfo = slash === -1 ? '' : rest.slice(slash);
  let name: string;
  let pathInfo: string;
  try {
    name = decodeURIComponent(rawName);
    pathInfo = decodeURIComponent(rawPathInfo);
  } catch {
    return { kind: 'invalid', name: rawName, pathInfo: rawPathInfo, path, rawQuery };
  }
  return { kind: CONTROLLER_NAME.test(name) ? 'controller' : 'invalid', name, pathInfo, path, rawQuery };
}
