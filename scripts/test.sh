#!/usr/bin/env bash
# Builds mxa (release, every backend whose dependencies are installed) and runs
# the whole test suite: CPU, Vulkan on lavapipe, OpenCL on PoCL, HIP host side.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
ctest --preset default -j"$(nproc)"
