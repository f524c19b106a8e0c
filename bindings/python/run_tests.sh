#!/usr/bin/env bash
# Tests of the Python binding (and of `mxa analyze` end to end) in a virtual
# environment under build/: installs the package from bindings/python and runs
# pytest against the built library.
#
#   bindings/python/run_tests.sh [BUILD_DIR]     (default: build)
#
# Needs a built libmxa.so (BUILD_DIR/libmxa.so, or MXA_LIBRARY) and, on Debian 12,
# the packages python3-venv python3-numpy python3-pytest (missing numpy/pytest are
# installed from PyPI into the environment instead).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(realpath -m "${1:-$root/build}")"
lib="${MXA_LIBRARY:-$build/libmxa.so}"
if [ ! -f "$lib" ]; then
  echo "run_tests.sh: $lib not found; build mxa first (cmake --preset default && cmake --build --preset default)" >&2
  exit 1
fi
# Debian's interpreter sees Debian's numpy and pytest; fall back to whatever python3 is first.
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
venv="$build/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv" || {
    echo "run_tests.sh: cannot create a virtual environment (apt-get install python3-venv)" >&2
    exit 1
  }
fi
if ! "$venv/bin/python" -c "import numpy, pytest" 2>/dev/null; then
  "$venv/bin/python" -m pip install -q numpy pytest
fi
"$venv/bin/python" -m pip install -q --no-deps --no-build-isolation --force-reinstall "$here"
cd "$build"  # not the source tree: the tests must import the installed package
MXA_LIBRARY="$lib" MXA_CLI="${MXA_CLI:-$build/bin/mxa}" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
