#!/usr/bin/env bash
# The server's floors (packages/server/.dependency-cruiser.cjs): no import runs back up, no circle.
# dependency-cruiser parses TypeScript with the `typescript` package it finds, and only with
# versions before 7; the workspace builds with TypeScript 7, so the checker and a TypeScript 5 of
# its own live in a folder of their own (installed once from the npm registry, then reused).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${IDEM_LAYERS_TOOLS:-$PWD/node_modules/.cache/idem-layers}"
if [ ! -x "$tools/node_modules/.bin/depcruise" ]; then
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --no-save --prefix "$tools" \
    dependency-cruiser@17.3.9 typescript@5.9.3 >/dev/null
fi
out=$(cd packages/server && "$tools/node_modules/.bin/depcruise" src --config .dependency-cruiser.cjs 2>&1) || {
  echo "$out"
  exit 1
}
echo "$out" | tail -n 1
# A checker that parsed nothing finds nothing: refuse that as a pass.
if echo "$out" | grep -q '(0 modules'; then
  echo "layers: no module was cruised (TypeScript not found by dependency-cruiser?)" >&2
  exit 1
fi
