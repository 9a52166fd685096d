// extqs's version, from its package.json.
import { OWN_PACKAGE } from './ownPackage.ts';

export const VERSION = typeof OWN_PACKAGE?.version === 'string' ? OWN_PACKAGE.version : 'unknown';
