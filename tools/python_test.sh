#!/usr/bin/env bash
# The Python package as a user installs it: `pip install .` into a fresh virtual environment
# (scikit-build-core + nanobind from PyPI, the C++ build from this checkout), then its pytest suite
# (tests needing a GPU skip and say so). VENV (default /tmp/sparsegen-venv) is recreated.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
VENV=${VENV:-/tmp/sparsegen-venv}
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# The wheel's CMake build reuses ccache when present; -j from the machine.
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$VENV/bin/python" -m pip install -q ".[test]"
# Run from outside the checkout, so `import sparsegen` finds the installed package.
cd /tmp
"$VENV/bin/python" -m pytest -q -rs "$OLDPWD/python/tests"
