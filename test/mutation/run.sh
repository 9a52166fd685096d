#!/bin/sh
# npm run test:mutation: Stryker on the pure modules of stryker.config.json (docs/testing.md, "Mutation testing").
# Arguments go to `stryker run`, e.g. `npm run test:mutation -- --mutate common/leastBusy.ts`.
# Stryker 10 (the first with mocha 12) needs Node 22 or newer: on an older Node it runs on the npm registry's
# `node` 24 package, installed once under node_modules/.cache, as .ci/run does for the LTS pass.
set -eu
cd "$(dirname "$0")/../.."
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  prefix=node_modules/.cache/extqs-node24
  [ -x "$prefix/node_modules/node/bin/node" ] || npm i --prefix "$prefix" --no-audit --no-fund --no-save node@24 >/dev/null
  PATH="$PWD/$prefix/node_modules/node/bin:$PATH"
  export PATH
fi
NODE_OPTIONS="${NODE_OPTIONS:-} --import $PWD/test/mutation/mochaCliShim.js"
export NODE_OPTIONS
exec npx stryker run "$@"
