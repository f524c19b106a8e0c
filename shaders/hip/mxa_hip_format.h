/*
 * MXFP4 on the device, SPEC §1 exactly as runtime/mxfp4.c computes it: the
 * shared exponent from the fp32 bits (never log2f), E2M1 round-to-nearest-even
 * with saturation, element 2k in the low nibble of byte k.
 */
#ifndef MXA_HIP_FORMAT_H
#define MXA_HIP_FORMAT_H

#define MXA_E8M0_NAN 0xFF

/* 2 x E2M1 value of a 4-bit code (sign in bit 3): the integers exact int8
 * emulation multiplies. Computed, not tabled: hiprtc has no static init order. */
MXA_DEV int mxa_twice(int code)
{
    const int c = code & 7;
    const int mag = c < 5 ? c : (c == 5 ? 6 : (c == 6 ? 8 : 12));
    return (code & 8) ? -mag : mag;
}

/* E2M1 magnitude of a 3-bit code. */
MXA_DEV float mxa_e2m1_value(int c)
{
    return 0.5f * (float)mxa_twice(c & 7);
}

/* Shared exponent for a finite block maximum (0 -> 0). Ceiling rule:
 * e = min{k : M <= q 2^k}; with M = m 2^E the answer is E-3, E-2 or E-1, and
 * 4m, 8m are exact in fp32, so the comparisons are exact. */
MXA_DEV int mxa_shared_exponent(float max_abs, int rule_ceil, float q)
{
    const mxa_u32 bits = mxa_bits(max_abs) & 0x7fffffffu;
    if (bits == 0) return 0;
    const int biased = (int)(bits >> 23);
    if (biased == 0) return -127; /* subnormal maximum */
    int e = biased - 127 - 2;
    if (rule_ceil) {
        const float m = 1.0f + (float)(bits & 0x7fffffu) * (1.0f / 8388608.0f);
        if (8.0f * m <= q)
            e -= 1;
        else if (!(4.0f * m <= q))
            e += 1;
    }
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return e;
}

/* 3-bit E2M1 code of a non-negative normalised magnitude (RNE, saturating). */
MXA_DEV int mxa_e2m1_code(float v)
{
    if (v <= 0.25f) return 0;
    if (v < 0.75f) return 1;
    if (v <= 1.25f) return 2;
    if (v < 1.75f) return 3;
    if (v <= 2.5f) return 4;
    if (v < 3.5f) return 5;
    if (v <= 5.0f) return 6;
    return 7;
}

MXA_DEV int mxa_is_finite(float x)
{
    return (mxa_bits(x) & 0x7f800000u) != 0x7f800000u;
}

/* Quantizes x[0..32) (the caller zero-pads a tail) into unpacked 4-bit codes
 * and returns the E8M0 scale byte. A non-finite block gets 0xFF and codes 0. */
MXA_DEV int mxa_quantize32(const float *x, int rule_ceil, float q, mxa_u8 *codes)
{
    float max_abs = 0.0f;
    int finite = 1;
    for (int i = 0; i < 32; i++) {
        if (!mxa_is_finite(x[i])) finite = 0;
        const float a = __builtin_fabsf(x[i]);
        if (a > max_abs) max_abs = a;
    }
    if (!finite) {
        for (int i = 0; i < 32; i++) codes[i] = 0;
        return MXA_E8M0_NAN;
    }
    const int e = mxa_shared_exponent(max_abs, rule_ceil, q);
    for (int i = 0; i < 32; i++) {
        const int sign = (mxa_bits(x[i]) >> 31) ? 8 : 0;
        codes[i] = (mxa_u8)(sign | mxa_e2m1_code(MXA_LDEXPF(__builtin_fabsf(x[i]), -e)));
    }
    return e + 127;
}

/* Decodes a 4-bit code under a scale byte (0xFF -> NaN). */
MXA_DEV float mxa_decode(int code, int scale)
{
    if (scale == MXA_E8M0_NAN) return MXA_NAN;
    const float v = MXA_LDEXPF(mxa_e2m1_value(code), scale - 127);
    return (code & 8) ? -v : v;
}

/* Code of element i of a packed block (low nibble first). */
MXA_DEV int mxa_nibble(const mxa_u8 *packed, int i)
{
    const int byte = packed[i >> 1];
    return (i & 1) ? (byte >> 4) : (byte & 15);
}

/* Exact product of two quantized blocks: an integer dot product times
 * 2^(sa + sb - 2) (each E2M1 value is half an integer). */
MXA_DEV float mxa_scale_int(int sum, int sa, int sb)
{
    if (sa == MXA_E8M0_NAN || sb == MXA_E8M0_NAN) return MXA_NAN;
    return MXA_LDEXPF((float)sum, sa + sb - 254 - 2);
}

#endif
