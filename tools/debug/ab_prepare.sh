#!/usr/bin/env bash
# Prepares other commits for tools/debug/ab_run.sh: same-machine A/B timing of two trees on the GPU
# machine, where host-to-host variance would otherwise look like a code change.
#
#   tools/debug/ab_prepare.sh COMMIT...     (repo root, after a local build in build/)
#
# Per commit it writes .gpudata/ab/<short sha>/src.tar (git archive, results/ left out) and that
# tree's template_index.h, generated here with this build's Clang indexer over the commit's own
# templates (the GPU machine has no LLVM 14). .gpudata/ travels with `carry`.
set -euo pipefail
INDEXER=${INDEXER:-build/tools/template_indexer/sparsegen_template_indexer}
[ -x "$INDEXER" ] || { echo "ab_prepare: no indexer at $INDEXER (build first)" >&2; exit 1; }
for c in "$@"; do
  sha=$(git rev-parse --short=7 "$c")
  dir=.gpudata/ab/$sha
  rm -rf "$dir" && mkdir -p "$dir"
  git archive --format=tar "$sha" -- . ':!results' >"$dir/src.tar"
  tmp=$(mktemp -d)
  tar -xf "$dir/src.tar" -C "$tmp"
  # The commit's template list, in its CMake order (what its build would index).
  mapfile -t hdrs < <(sed -n '/set(SPARSEGEN_TEMPLATE_HEADERS/,/)/p' "$tmp/templates/CMakeLists.txt" |
    grep -o 'sg_[a-z_0-9]*\.cuh' | sed "s|^|$tmp/templates/|")
  "$INDEXER" --out "$dir/template_index.h" --stubs "$tmp/tools/template_indexer/stubs" "${hdrs[@]}"
  rm -rf "$tmp"
  echo "ab_prepare: $sha ($(du -sh "$dir" | cut -f1))"
done
