#!/bin/bash
# npm run test:breaks: each test/breaks/*.patch breaks one behaviour in the product; the test that names it must
# then fail. Applies each patch in turn (git apply), builds when the test is end-to-end (it runs build/), runs
# that test alone, reverts the patch, and says whether the break was CAUGHT. Exits 1 if any was MISSED or
# no longer applies (STALE: the code moved; remake the patch). `run.sh foo.patch ...` runs only those.
# A patch's header, before its diff, names its test (git apply skips text before the first `diff`):
#   Break: what the patch breaks, in a line
#   Test: test/e2e/foo.test.ts
#   Grep: the pattern for mocha -g that picks the test
set -u
cd "$(dirname "$0")/../.."
if [ $# -gt 0 ]; then patches=("$@"); else patches=(test/breaks/*.patch); fi
applied=''
revert() { [ -n "$applied" ] && git apply -R "$applied" && applied=''; }
trap 'revert; exit 130' INT TERM
failed=0
built=0
for patch in "${patches[@]}"; do
  [ -f "$patch" ] || patch="test/breaks/$patch"
  test=$(sed -n 's/^Test: //p' "$patch" | head -1)
  grep=$(sed -n 's/^Grep: //p' "$patch" | head -1)
  name=$(basename "$patch")
  if [ -z "$test" ] || [ -z "$grep" ]; then
    echo "BAD     $name: no Test: or Grep: line in its header"
    failed=1
    continue
  fi
  if ! git apply "$patch" 2>/dev/null; then
    echo "STALE   $name: no longer applies"
    failed=1
    continue
  fi
  applied="$patch"
  if [[ "$test" == test/e2e/* || "$test" == test/reliability/* ]]; then
    npm run build >/dev/null 2>&1 || echo "        $name: the build failed with the patch"
    built=1
  fi
  log="$(mktemp)"
  if npx mocha "$test" -g "$grep" >"$log" 2>&1; then
    echo "MISSED  $name: $test -g '$grep' passed with the break ($(grep -Eo '[0-9]+ passing' "$log"))"
    failed=1
  elif grep -Eq '^ +[0-9]+ failing' "$log"; then
    echo "CAUGHT  $name: $(grep -Eo '[0-9]+ failing' "$log") in $test -g '$grep'"
  else
    echo "MISSED  $name: $test did not run (see below)"
    tail -20 "$log"
    failed=1
  fi
  rm -f "$log"
  revert
done
# Leave build/ as the sources are.
if [ "$built" = 1 ]; then npm run build >/dev/null 2>&1; fi
exit "$failed"
