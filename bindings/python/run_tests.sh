#!/usr/bin/env bash
# The Python package as a user gets it: builds the wheel from the repository root
# (pip wheel ., scikit-build-core building libmxa with CMake), installs it in a fresh
# virtual environment and runs the binding's tests there with no MXA_LIBRARY, so the
# libmxa.so inside the package is the one loaded (test_arrays.py checks that), then
# `python -m mxa probe` and `python -m mxa demo`.
#
#   bindings/python/run_tests.sh [--torch] [BUILD_DIR]     (default: build)
#
# --torch installs PyTorch from PyPI into the environment (about 2 minutes and 5 GB here)
# and makes the torch tests required instead of skipped. BUILD_DIR holds the wheel, the
# environment and the `mxa` CLI the analyze tests run (BUILD_DIR/bin/mxa, or MXA_CLI).
# Needs network to PyPI for the build backend (and torch); Debian's python3-venv,
# python3-numpy and python3-pytest serve the rest (the environment sees system packages).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
torch=0
if [ "${1:-}" = "--torch" ]; then torch=1; shift; fi
build="$(realpath -m "${1:-$root/build}")"
py=/usr/bin/python3  # Debian's interpreter sees Debian's numpy and pytest
[ -x "$py" ] || py="$(command -v python3)"
wheels="$build/python-wheel"
venv="$build/python-wheel-venv"
rm -rf "$wheels" "$venv"
SECONDS=0
"$py" -m pip wheel -q --no-deps -w "$wheels" "$root"
echo "run_tests.sh: wheel built in ${SECONDS}s: $(cd "$wheels" && ls)"
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q "$wheels"/mxa-*.whl
if ! "$venv/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  "$venv/bin/python" -m pip install -q numpy pytest
fi
if [ $torch = 1 ]; then
  SECONDS=0
  "$venv/bin/python" -m pip install -q torch
  echo "run_tests.sh: torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') installed in ${SECONDS}s"
fi
cd "$build"  # not the source tree: the tests must import the installed package
unset MXA_LIBRARY PYTHONPATH
"$venv/bin/python" -c "import mxa; print(mxa.library_path()); print(mxa.devices())"
MXA_DEVICE=cpu "$venv/bin/python" -m mxa probe
MXA_DEVICE=cpu "$venv/bin/python" -m mxa demo
MXA_TEST_REQUIRE_TORCH=$torch MXA_CLI="${MXA_CLI:-$build/bin/mxa}" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
if [ $torch = 1 ]; then "$venv/bin/python" "$root/examples/python_torch.py"; fi
