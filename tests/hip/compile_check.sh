#!/usr/bin/env bash
# Compile-checks the HIP kernels (shaders/hip) for every AMD GPU architecture the
# installed clang knows, without ROCm: clang -x hip --cuda-device-only -nogpulib
# -nogpuinc, down to AMDGPU assembly (instruction selection proves each builtin
# exists on that arch; no device libraries are linked, so nothing is executed).
#
# Usage: tests/hip/compile_check.sh [clang]   (default: newest clang-NN on PATH)
# Exit 0 with "SKIP" only when no clang with the AMDGPU target exists (CI
# installs clang-19: apt-get install clang-19). Any compile failure exits 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../../shaders/hip"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

pick_clang() {
    if [ $# -gt 0 ] && [ -n "$1" ]; then echo "$1"; return; fi
    for v in 22 21 20 19 18 17 16 15; do
        if command -v "clang-$v" >/dev/null 2>&1; then echo "clang-$v"; return; fi
    done
    command -v clang >/dev/null 2>&1 && echo clang
}
cc=$(pick_clang "${1:-}")
if [ -z "$cc" ] || ! "$cc" -print-targets 2>/dev/null | grep -q amdgcn; then
    echo "SKIP: no clang with the AMDGPU target (apt-get install clang-19); HIP kernels not compile-checked"
    exit 0
fi
echo "compiler: $("$cc" --version | head -1)"

# Does this clang know the arch? (an unknown --offload-arch is an error)
knows() { echo 'extern "C" __attribute__((global)) void k() {}' |
          "$cc" -x hip --cuda-device-only -nogpulib -nogpuinc --offload-arch="$1" -S -o /dev/null - 2>/dev/null; }

# arch : variants worth compiling there (scalar everywhere; MFMA where the ISA has it)
plan="gfx908:scalar,i8k8 gfx90a:scalar,i8k8 gfx942:scalar,i8k16 gfx950:scalar,i8k16,fp4
gfx1030:scalar gfx1100:scalar gfx1101:scalar gfx1151:scalar gfx1200:scalar gfx1201:scalar"

pass=0 fail=0 skipped=""
compile() { # arch name file defines...
    local arch=$1 name=$2 file=$3; shift 3
    local log="$out/$arch-$name.log"
    if "$cc" -x hip --cuda-device-only -nogpulib -nogpuinc --offload-arch="$arch" -O3 \
        -ffp-contract=off -std=c++17 -Wall -Werror -I"$src" "$@" -S -o "$out/$arch-$name.s" "$file" >"$log" 2>&1; then
        echo "ok   $arch $name"
        pass=$((pass + 1))
    else
        echo "FAIL $arch $name"
        sed 's/^/    /' "$log" | head -40
        fail=$((fail + 1))
    fi
}
# An attention configuration without and with the extras (bias, mask, key lengths), f32 out,
# and the 16-bit outputs once each (-DMXA_OUT=1 f16, 2 bf16).
attention() { # arch name defines...
    local arch=$1 name=$2; shift 2
    compile "$arch" "$name" "$src/mxa_attention.hip" "$@" -DMXA_EXTRAS=0
    compile "$arch" "$name-extras" "$src/mxa_attention.hip" "$@" -DMXA_EXTRAS=1
    compile "$arch" "$name-f16" "$src/mxa_attention.hip" "$@" -DMXA_EXTRAS=0 -DMXA_OUT=1
    compile "$arch" "$name-extras-bf16" "$src/mxa_attention.hip" "$@" -DMXA_EXTRAS=1 -DMXA_OUT=2
}
for entry in $plan; do
    arch=${entry%%:*}
    variants=${entry#*:}
    if ! knows "$arch"; then skipped="$skipped $arch"; continue; fi
    compile "$arch" prep "$src/mxa_prep.hip"
    for v in ${variants//,/ }; do
        case $v in
        scalar) for cfg in "32 32" "128 64" "256 4096"; do set -- $cfg
                    attention "$arch" "scalar-d$1-bc$2" -DMXA_D=$1 -DMXA_BC=$2 -DMXA_VARIANT=0; done ;;
        i8k8)   for cfg in "64 64" "128 128" "256 256"; do set -- $cfg
                    attention "$arch" "mfma-i8-d$1-bc$2" -DMXA_D=$1 -DMXA_BC=$2 -DMXA_VARIANT=1 -DMXA_MFMA_K16=0; done ;;
        i8k16)  for cfg in "64 64" "128 128" "256 256"; do set -- $cfg
                    attention "$arch" "mfma-i8-d$1-bc$2" -DMXA_D=$1 -DMXA_BC=$2 -DMXA_VARIANT=1 -DMXA_MFMA_K16=1; done ;;
        fp4)    for cfg in "32 32" "64 64" "128 128" "256 256"; do set -- $cfg
                    attention "$arch" "mfma-fp4-d$1-bc$2" -DMXA_D=$1 -DMXA_BC=$2 -DMXA_VARIANT=2; done ;;
        esac
    done
done
# gfx950 with a clang that predates it: LLVM IR from this clang, assembly from the
# LLVM inside the triton wheel (pip install triton), if present. Never silently.
case " $skipped " in
*" gfx950 "*)
    tdir=${MXA_TRITON_DIR:-$(python3 -c 'import os, importlib.util as u; s = u.find_spec("triton"); print(os.path.dirname(s.origin) if s else "")' 2>/dev/null)}
    if [ -n "$tdir" ] && [ -f "$tdir/_C/libtriton.so" ]; then
        for cfg in "32 32 0" "64 64 0" "128 128 0" "256 256 0" "64 64 1" "128 128 1"; do set -- $cfg
            if python3 "$here/gfx950_via_ir.py" "$cc" "$src" "$tdir" "$1" "$2" "$3" >"$out/ir.log" 2>&1; then
                echo "ok   gfx950 mfma-fp4-d$1-bc$2-extras$3 (via LLVM IR + triton's LLVM): $(tail -1 "$out/ir.log")"
                pass=$((pass + 1))
            else
                echo "FAIL gfx950 mfma-fp4-d$1-bc$2-extras$3 (via LLVM IR)"; sed 's/^/    /' "$out/ir.log" | tail -20
                fail=$((fail + 1))
            fi
        done
        skipped=${skipped/ gfx950/}
        echo "note: gfx950 compiled from $cc's IR by triton's LLVM; the __builtin_ spelling itself needs clang >= 20 / ROCm >= 6.4"
    fi ;;
esac
[ -n "$skipped" ] && echo "not known to $cc (not compiled):$skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
