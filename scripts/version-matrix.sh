#!/usr/bin/env bash
# The peer version matrix: for each cell (lowest and highest supported peers), a `git clone` of
# this checkout's HEAD into a temporary directory gets pnpm `overrides` for the peers, a fresh
# install, the typecheck of the published packages, and the gates that touch the peers: the store's
# conformance on PGlite and PostgreSQL, the server's middleware on both and its canary on tRPC's
# internals, the link's unit tests and the end-to-end suites of packages/tests. The checkout itself
# is never changed. Prints one line per cell; exits non-zero when any cell fails.
#
# Needs: pnpm, git, the npm registry, PostgreSQL at IDEM_TEST_ADMIN_URL (default
# postgres://postgres@127.0.0.1:5432/postgres). Runs on the Node on PATH; Node 20 is the only one
# this machine has, so Node 22 is not covered here.
#
# Usage: scripts/version-matrix.sh [cell...]   (cells: low high; default both)
set -uo pipefail

repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
export IDEM_TEST_ADMIN_URL="${IDEM_TEST_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

# name | @trpc/server and @trpc/client | drizzle-orm | zod. zod is the server's own dependency
# (^4, its tests use v4-only APIs such as z.uuid()), not a peer, so both cells run zod 4.
cells=(
  'low|11.22.1|0.44.4|4.6.7'
  'high|11.25.2|0.45.4|4.6.7'
)
wanted=("$@")

run_cell() {
  local name=$1 trpc=$2 drizzle=$3 zod=$4
  local dir log
  dir="$(mktemp -d -t idem-matrix-"$name".XXXXXX)"
  log="$dir.log"
  : >"$log"
  step() {
    echo "--- $*" >>"$log"
    (cd "$dir" && "$@") >>"$log" 2>&1
  }
  git clone -q "$repo" "$dir" >>"$log" 2>&1 || return 1
  # Overrides pin every copy of a peer, the example's too; @trpc/tanstack-react-query pins its tRPC
  # peers to its own version, so its allowed versions follow the cell.
  cat >>"$dir/pnpm-workspace.yaml" <<YAML
overrides:
  '@trpc/server': '$trpc'
  '@trpc/client': '$trpc'
  drizzle-orm: '$drizzle'
  zod: '$zod'
YAML
  sed -i "s|'@trpc/tanstack-react-query>@trpc/client': '[^']*'|'@trpc/tanstack-react-query>@trpc/client': '$trpc'|; s|'@trpc/tanstack-react-query>@trpc/server': '[^']*'|'@trpc/tanstack-react-query>@trpc/server': '$trpc'|" \
    "$dir/pnpm-workspace.yaml"
  step pnpm install --no-frozen-lockfile --config.confirmModulesPurge=false || return 1
  step node -e "const fs = require('fs'); for (const [d, p] of [['server', '@trpc/server'], ['client', '@trpc/client'], ['store-drizzle', 'drizzle-orm'], ['server', 'zod']]) console.log(p, JSON.parse(fs.readFileSync('packages/' + d + '/node_modules/' + p + '/package.json', 'utf8')).version)" || return 1
  local pkg
  for pkg in contract store-drizzle server client admin; do
    step pnpm --filter "@idem/$pkg" typecheck || return 1
  done
  step bash -c 'cd packages/store-drizzle && pnpm exec vitest run test/pglite.test.ts test/postgres-js.test.ts' || return 1
  step bash -c 'cd packages/server && pnpm exec vitest run test/pglite.test.ts test/postgres.test.ts test/trpcInternals.test.ts' || return 1
  step bash -c 'cd packages/client && pnpm exec vitest run --project unit' || return 1
  # The registry suite publishes the checkout's own build: no peer of a cell changes what it checks.
  step bash -c 'cd packages/tests && pnpm exec vitest run --exclude test/registryInstall.test.ts' || return 1
  rm -rf "$dir"
  return 0
}

failed=0
for cell in "${cells[@]}"; do
  IFS='|' read -r name trpc drizzle zod <<<"$cell"
  if ((${#wanted[@]})) && [[ " ${wanted[*]} " != *" $name "* ]]; then continue; fi
  start=$SECONDS
  if run_cell "$name" "$trpc" "$drizzle" "$zod"; then result=pass; else result=FAIL; failed=1; fi
  echo "cell $name: @trpc/server+client $trpc, drizzle-orm $drizzle, zod $zod, node $(node -v): $result ($((SECONDS - start))s)"
  if [[ $result == FAIL ]]; then
    log=$(ls -d "${TMPDIR:-/tmp}"/idem-matrix-"$name".*.log 2>/dev/null | tail -1)
    echo "  log: $log (its last lines:)"
    [[ -n $log ]] && tail -n 40 "$log" | sed 's/^/  | /'
  fi
done
exit $failed
