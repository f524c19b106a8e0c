#!/usr/bin/env bash
# Installs a built mxa into a temporary prefix and builds a consumer against it,
# once with find_package(mxa) and once with pkg-config; both must run.
#   tests/install/check.sh [BUILD_DIR]      (default: build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(realpath "${1:-$here/../../build}")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cmake/consumer"
pc="$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs mxa)"
cc "$here/consumer.c" $pc -o "$tmp/pc-consumer"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/pc-consumer"
test -x "$tmp/prefix/bin/mxa"
echo "install check: find_package and pkg-config consumers built and ran"
