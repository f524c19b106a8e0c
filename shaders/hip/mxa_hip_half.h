/*
 * The 16-bit outputs: fp32 rounded once to f16 or bf16, round to nearest even,
 * bit for bit as runtime/tensor.c's mxa_f32_to_f16 / mxa_f32_to_bf16 (integer
 * arithmetic only, so hiprtc, a bare clang and the host emulator agree).
 */
#ifndef MXA_HIP_HALF_H
#define MXA_HIP_HALF_H

typedef unsigned short mxa_u16;

MXA_DEV mxa_u16 mxa_f16_bits(float f)
{
    const mxa_u32 u = mxa_bits(f), au = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
    const mxa_u32 rounded = au + 0x0fffu + ((au >> 13) & 1u); /* RNE on 13 dropped bits */
    const mxa_u32 normal = (((rounded >> 23) - 112u) << 10) | ((rounded >> 13) & 0x3ffu);
    /* Below 2^-14: units of 2^-24 (exact: a power-of-two scale), rounded to nearest even
     * by adding and taking away 2^23. Selects, not branches: the MFMA epilogue spilled. */
    const float tiny = au < 0x38800000u ? __builtin_fabsf(f) * 16777216.0f : 0.0f;
    const mxa_u32 units = (mxa_u32)((tiny + 8388608.0f) - 8388608.0f);
    const mxa_u32 mag = au > 0x7f800000u   ? 0x7e00u  /* NaN */
                        : au >= 0x477ff000u ? 0x7c00u  /* >= 65520: rounds to Inf */
                        : au < 0x38800000u  ? units
                                            : normal;
    return (mxa_u16)(sign | mag);
}

MXA_DEV mxa_u16 mxa_bf16_bits(float f)
{
    mxa_u32 u = mxa_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (mxa_u16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (mxa_u16)(u >> 16);
}

#endif
