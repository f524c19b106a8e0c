/*
 * The matrix instructions of the MFMA variants, one wrapper each, and the
 * operand layouts they assume (AMD CDNA ISA, 32x32 MFMA family, wave64):
 *   A (32 x K): lane l holds row l % 32, K-slice l / 32 of the instruction's K;
 *   B (K x 32): lane l holds column l % 32, the same K-slice;
 *   C/D (32 x 32): lane l holds column l % 32, element i is row
 *                  8 * (i / 4) + 4 * (l / 32) + i % 4.
 * int8, K = 8  (gfx908/gfx90a): 4 int8 per lane in an int, k = 4 * (l / 32) + byte.
 * int8, K = 16 (gfx94x/gfx950): 8 int8 per lane in a long, k = 8 * (l / 32) + byte.
 * MXFP4 scaled, K = 64 (gfx950): 32 E2M1 codes per lane (16 bytes, low nibble
 *   first) = one MX block, k = 32 * (l / 32) + element; the lane's E8M0 scale
 *   is byte 0 of its scale operand (op_sel 0). Format code 4 = E2M1.
 * Host emulation (tests/hip) provides the same functions in plain C++.
 */
#ifndef MXA_HIP_MFMA_H
#define MXA_HIP_MFMA_H

#if !defined(MXA_HIP_EMULATE)
typedef int mxa_v16i __attribute__((ext_vector_type(16)));
typedef float mxa_v16f __attribute__((ext_vector_type(16)));
typedef int mxa_v8i __attribute__((ext_vector_type(8)));

#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_I8
#if MXA_MFMA_K16
typedef mxa_i64 mxa_i8op; /* 8 int8 */
#define MXA_I8_K 16
MXA_DEV mxa_v16i mxa_mfma_i8(mxa_i8op a, mxa_i8op b, mxa_v16i c)
{
    return __builtin_amdgcn_mfma_i32_32x32x16_i8(a, b, c, 0, 0, 0);
}
#else
typedef int mxa_i8op; /* 4 int8 */
#define MXA_I8_K 8
MXA_DEV mxa_v16i mxa_mfma_i8(mxa_i8op a, mxa_i8op b, mxa_v16i c)
{
    return __builtin_amdgcn_mfma_i32_32x32x8i8(a, b, c, 0, 0, 0);
}
#endif
#endif

#if MXA_VARIANT == MXA_HIP_VARIANT_MFMA_FP4
#if defined(MXA_FP4_INTRINSIC_DECL)
/* Compile checks with a clang that predates the builtin (tests/hip/compile_check.sh):
 * the same LLVM intrinsic, named directly, with the FP4 operand width (4 dwords). */
typedef int mxa_v4i __attribute__((ext_vector_type(4)));
extern "C" __device__ mxa_v16f mxa_llvm_mfma_scale_fp4(mxa_v4i, mxa_v4i, mxa_v16f, int, int, int, int, int, int) __asm(
    "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v4i32.v4i32");
MXA_DEV mxa_v16f mxa_mfma_fp4(mxa_v8i a, mxa_v8i b, mxa_v16f c, int scale_a, int scale_b)
{
    const mxa_v4i a4 = {a[0], a[1], a[2], a[3]}, b4 = {b[0], b[1], b[2], b[3]};
    return mxa_llvm_mfma_scale_fp4(a4, b4, c, 4, 4, 0, scale_a, 0, scale_b);
}
#else
MXA_DEV mxa_v16f mxa_mfma_fp4(mxa_v8i a, mxa_v8i b, mxa_v16f c, int scale_a, int scale_b)
{
    return __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a, b, c, 4, 4, 0, scale_a, 0, scale_b);
}
#endif
#endif
#endif /* !MXA_HIP_EMULATE */

/* Row of the 32x32 result tile held in element i of lane l. */
MXA_DEV int mxa_mfma_row(int i, int lane)
{
    return 8 * (i >> 2) + 4 * (lane >> 5) + (i & 3);
}

#endif
