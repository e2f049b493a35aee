#!/usr/bin/env bash
# Run HERE (the build machine, repo root) before each device-tool call of tools/gpu_run.sh.
# Prepares the ignored folders that call carries (carry = [".debs", ".gpudata"]):
#   .debs/     Debian packages of our build dependencies (the GPU machine cannot fetch anything);
#   .gpudata/  data.tar.xz (../shared/data, which does not travel) and template_index.h (the
#              Clang template indexer's output: the GPU machine has no LLVM 14 to run it).
# Then prints the device-tool command to use.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PREP_BUILD_DIR=${PREP_BUILD_DIR:-build-prep}
DATA_SRC=${SPARSEGEN_DATA:-$(cd .. && pwd)/shared/data}

for p in /.debs/ /.gpudata/; do
  git check-ignore -q "${p#/}x" 2>/dev/null || grep -qx "$p" .git/info/exclude || echo "$p" >>.git/info/exclude
done

mkdir -p .debs .gpudata
if ! compgen -G ".debs/*.deb" >/dev/null; then
  (cd .debs && apt-get download libfmt-dev libfmt9 libeigen3-dev libsqlite3-dev libsqlite3-0 \
     nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev)
fi

# Re-pack the data only when something in it is newer than the archive.
if [ ! -f .gpudata/data.tar.xz ] || [ -n "$(find "$DATA_SRC" -newer .gpudata/data.tar.xz -print -quit)" ]; then
  tar -C "$(dirname "$DATA_SRC")" -cf - "$(basename "$DATA_SRC")" | xz -T2 -6 >.gpudata/data.tar.xz.tmp
  mv .gpudata/data.tar.xz.tmp .gpudata/data.tar.xz
fi

# The template index, from the current templates/ (the indexer target rebuilds it when needed).
if [ -f tools/template_indexer/CMakeLists.txt ]; then
  [ -f "$PREP_BUILD_DIR/build.ninja" ] || cmake -S . -B "$PREP_BUILD_DIR" -G Ninja >/dev/null
  ninja -C "$PREP_BUILD_DIR" -j2 sparsegen_template_index >/dev/null
  cp "$PREP_BUILD_DIR/generated/templates/template_index.h" .gpudata/template_index.h
fi

du -sh .debs .gpudata
echo "device tool: run(command=\"SPARSEGEN_GIT_COMMIT=$(git rev-parse HEAD) bash tools/gpu_run.sh\", carry=[\".debs\", \".gpudata\"], timeout_s=600)"
