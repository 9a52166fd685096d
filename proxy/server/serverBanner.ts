// The Server field of every answer, as Apache's ServerTokens and nginx's server_tokens choose it.
import type { ServerTokens } from '../../common/settings.ts';
import { VERSION } from '../../common/version.ts';

/** The field's value for `tokens`; undefined for `off`, which sends none. */
export function serverBanner(tokens: ServerTokens): string | undefined {
  if (tokens === 'off') return undefined;
  return tokens === 'prod' ? 'extqs' : `extqs/${VERSION} (Node.js ${process.version})`;
}
