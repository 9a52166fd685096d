// undici's Pool class alone (its package has no exports map, so the file is importable): the package's
// index also loads fetch, WebSocket, the mock and cache code, 6.5 MB of each proxy worker's memory.
declare module 'undici/lib/dispatcher/pool.js' {
  import { Pool } from 'undici';
  export default Pool;
}
