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
    const mxa_u32 u = mxa_bits(f), au = u & 0x7fffffffu;
    const mxa_u32 sign = (u >> 16) & 0x8000u;
    if (au > 0x7f800000u) return (mxa_u16)(sign | 0x7e00u);   /* NaN */
    if (au >= 0x477ff000u) return (mxa_u16)(sign | 0x7c00u);  /* >= 65520: rounds to Inf */
    if (au < 0x38800000u) {                                   /* below 2^-14: units of 2^-24 */
        const int shift = 126 - (int)(au >> 23);              /* >= 14 */
        if ((au >> 23) == 0 || shift > 31) return (mxa_u16)sign;
        const mxa_u32 mant = (au & 0x7fffffu) | 0x800000u;
        const mxa_u32 half = 1u << (shift - 1), rest = mant & ((half << 1) - 1u);
        mxa_u32 units = mant >> shift;
        if (rest > half || (rest == half && (units & 1u))) units++;
        return (mxa_u16)(sign | units);
    }
    const mxa_u32 rounded = au + 0x0fffu + ((au >> 13) & 1u); /* RNE on 13 dropped bits */
    return (mxa_u16)(sign | (((rounded >> 23) - 112u) << 10) | ((rounded >> 13) & 0x3ffu));
}

MXA_DEV mxa_u16 mxa_bf16_bits(float f)
{
    mxa_u32 u = mxa_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (mxa_u16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (mxa_u16)(u >> 16);
}

/* Element `at` of an output of type MXA_HIP_OUT_*. */
MXA_DEV void mxa_store_out(unsigned long long out, int dtype, long long at, float x)
{
    if (dtype == MXA_HIP_OUT_F32) ((float *)out)[at] = x;
    else ((mxa_u16 *)out)[at] = dtype == MXA_HIP_OUT_F16 ? mxa_f16_bits(x) : mxa_bf16_bits(x);
}

#endif
