#!/usr/bin/env bash
# Installs what sparsegen needs from Debian (bookworm) and builds it (Release) into build/.
# The CUDA toolkit (>= 12; CUDA 13 tested) is expected at /usr/local/cuda; no GPU is needed to build.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ ccache clang-14 lld-14 libclang-rt-14-dev libclang-14-dev llvm-14-dev
          libeigen3-dev libfmt-dev libsqlite3-dev sqlite3 libgtest-dev libcli11-dev nlohmann-json3-dev
          python3-dev python3-venv python3-pip)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: the CUDA toolkit was not found (expected /usr/local/cuda)" >&2; exit 1
fi
export PATH="/usr/local/cuda/bin:$PATH"

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGEN_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "setup: built $BUILD_DIR/tools/sparsegen"
