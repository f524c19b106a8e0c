#!/usr/bin/env bash
# Installs the Debian 12 packages mxa builds and tests with, if any is missing, then
# glslang 13 for the KHR cooperative-matrix shaders (scripts/glslang13.sh, from PyPI).
# Needs root or sudo for apt. Safe to run again: installs nothing when all are present.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang llvm libclang-rt-dev   # gcc + clang, libFuzzer/sanitizer runtimes
  clang-19                                                       # compile check of the HIP kernels (AMDGPU targets)
  libcmocka-dev valgrind python3                                 # tests
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools mesa-vulkan-drivers  # Vulkan backend (+ SPIR-V validation) + lavapipe
  ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-headers pocl-opencl-icd # OpenCL backend + PoCL
  libopenblas-dev                                                # the OpenBLAS baseline of `mxa bench`
  python3-venv python3-numpy python3-pytest python3-setuptools   # the Python binding and its tests
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
else
  echo "deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Not fatal: without it everything but the KHR Vulkan shader variants still builds.
if ! "$(dirname "$0")/glslang13.sh"; then
  echo "deps: WARNING: glslang 13 could not be installed (no network to PyPI?):" >&2
  echo "deps: WARNING: the KHR cooperative-matrix Vulkan kernels will not be built." >&2
  echo "deps: WARNING: run scripts/glslang13.sh again later, or configure with -DMXA_GLSLANG_KHR=<glslangValidator >= 13>." >&2
fi
