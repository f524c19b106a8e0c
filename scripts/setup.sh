#!/usr/bin/env bash
# The first command on a fresh Debian 12 machine: installs what is missing,
# builds mxa (release), and runs `mxa probe` and `mxa demo` on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
export MXA_DEVICE="${MXA_DEVICE:-cpu}"
./build/bin/mxa probe
./build/bin/mxa demo
