#!/usr/bin/env bash
# Prepares an older commit as a variant of tools/gpu_ab.sh / tools/gpu_ab_quick.sh (run here, in
# the repo root, after a local build in build/):
#
#   tools/gpu_ab_prepare.sh COMMIT [NAME]     (NAME defaults to the short sha)
#
# It writes the commit's tree to .ab/NAME (results/ left out), links .debs, generates that tree's
# template index with this build's Clang indexer over the commit's own templates, in its CMake
# order (the GPU machine has no LLVM 14), and records the commit in .ab/NAME/.commit. .ab/ is
# added to .git/info/exclude; name it in the device tool's `carry`.
set -euo pipefail
c=${1:?usage: gpu_ab_prepare.sh COMMIT [NAME]}
sha=$(git rev-parse --verify "$c^{commit}")
name=${2:-$(git rev-parse --short=7 "$sha")}
INDEXER=${INDEXER:-build/tools/template_indexer/sparsegen_template_indexer}
[ -x "$INDEXER" ] || { echo "gpu_ab_prepare: no indexer at $INDEXER (build first)" >&2; exit 1; }
grep -qx '/.ab/' .git/info/exclude 2>/dev/null || echo '/.ab/' >>.git/info/exclude
dir=.ab/$name
rm -rf "$dir" && mkdir -p "$dir/.gpudata"
git archive "$sha" | tar -x -C "$dir"
rm -rf "$dir/results"
ln -s ../../.debs "$dir/.debs"
echo "$sha" >"$dir/.commit"
mapfile -t hdrs < <(sed -n '/set(SPARSEGEN_TEMPLATE_HEADERS/,/)/p' "$dir/templates/CMakeLists.txt" |
  grep -o 'sg_[a-z_0-9]*\.cuh' | sed "s|^|$dir/templates/|")
"$INDEXER" --out "$dir/.gpudata/template_index.h" --stubs "$dir/tools/template_indexer/stubs" \
  "${hdrs[@]}"
echo "gpu_ab_prepare: $dir = $sha ($(du -sh "$dir" | cut -f1))"
