#!/usr/bin/env python3
"""Compile-checks the gfx950 (MI350) variant when the installed clang predates gfx950.

clang (19) lowers mxa_attention.hip to LLVM IR for gfx942, with the scaled-MFMA
intrinsic named directly (-DMXA_FP4_INTRINSIC_DECL); the IR is retargeted to
gfx950 and compiled to assembly by the LLVM inside the `triton` wheel (PyPI),
which knows gfx950. Prints the MFMA instructions found; exits 1 on failure.
Usage: gfx950_via_ir.py CLANG SHADER_DIR TRITON_PKG_DIR D BC [EXTRAS]
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile


def main():
    clang, src, triton_dir, d, bc = sys.argv[1:6]
    extras = sys.argv[6] if len(sys.argv) > 6 else "0"
    with tempfile.TemporaryDirectory() as tmp:
        ll = os.path.join(tmp, "k.ll")
        subprocess.run([clang, "-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc",
                        "--offload-arch=gfx942", "-O3", "-ffp-contract=off", "-std=c++17", "-Wall", "-Werror",
                        "-I" + src, "-DMXA_D=" + d, "-DMXA_BC=" + bc, "-DMXA_VARIANT=2",
                        "-DMXA_EXTRAS=" + extras, "-DMXA_FP4_INTRINSIC_DECL=1", "-emit-llvm", "-S", "-o", ll,
                        os.path.join(src, "mxa_attention.hip")], check=True)
        ir = open(ll).read()
    # Retarget: gfx942's feature list and clang's no-AGPR inference do not apply to gfx950.
    ir = ir.replace('"target-cpu"="gfx942"', '"target-cpu"="gfx950"')
    ir = re.sub(r' "target-features"="[^"]*"', "", ir).replace(' "amdgpu-no-agpr"', "")
    spec = importlib.util.spec_from_file_location("libtriton", os.path.join(triton_dir, "_C", "libtriton.so"))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    lib.llvm.init_targets()
    asm = lib.llvm.translate_to_asm(ir, "amdgcn-amd-amdhsa", "gfx950", "", [], False, False, False)
    ops = re.findall(r"v_mfma_scale_f32_32x32x64_f8f6f4[^\n]*cbsz:4 blgp:4", asm)
    scratch = re.search(r"\.private_segment_fixed_size:\s*(\d+)", asm)
    print("gfx950 mfma-fp4 D=%s BC=%s extras=%s: %d scaled FP4 MFMA instructions, scratch %s bytes"
          % (d, bc, extras, len(ops), scratch.group(1) if scratch else "?"))
    return 0 if ops else 1


if __name__ == "__main__":
    sys.exit(main())
