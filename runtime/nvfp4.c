/* The NVFP4 baseline format (see nvfp4.h): E4M3 block scales, E2M1 elements. */
#include <math.h>
#include <string.h>

#include "mxfp4.h"
#include "nvfp4.h"

/* Round a non-negative, exactly representable t to the nearest integer, ties
 * to even, whatever the floating-point rounding mode is. */
static float round_even(float t)
{
    float f = floorf(t), frac = t - f; /* exact: t has at most 24 significant bits */
    if (frac > 0.5f || (frac == 0.5f && fmodf(f, 2.0f) != 0.0f)) f += 1.0f;
    return f;
}

uint8_t mxa_e4m3_encode(float y)
{
    if (isnan(y)) return 0x7F;
    if (!(y > 0.0f)) return 0;
    if (y >= MXA_E4M3_MAX) return 0x7E; /* saturate: 1.75 * 2^8 */
    int e;
    (void)frexpf(y, &e); /* y = f 2^e, f in [0.5, 1): floor(log2 y) = e - 1 */
    e -= 1;
    if (e < -6) {
        /* Subnormal: multiples of 2^-9; a carry to 8 is the smallest normal 2^-6. */
        float r = round_even(ldexpf(y, 9));
        return (uint8_t)(r >= 8.0f ? 0x08 : (int)r);
    }
    float r = round_even(ldexpf(y, 3 - e)); /* in [8, 16] */
    if (r >= 16.0f) {
        r = 8.0f;
        e += 1;
    }
    if (e > 8 || (e == 8 && r > 14.0f)) return 0x7E;
    return (uint8_t)(((e + 7) << 3) | ((int)r - 8));
}

float mxa_e4m3_decode(uint8_t byte)
{
    const int exp = (byte >> 3) & 15, man = byte & 7;
    if (exp == 15 && man == 7) return NAN;
    float v = exp == 0 ? ldexpf((float)man, -9) : ldexpf((float)(8 + man), exp - 10);
    return (byte & 0x80) ? -v : v;
}

float mxa_nvfp4_tensor_scale(float amax)
{
    if (!(amax > 0.0f) || !isfinite(amax)) return 1.0f;
    return amax / (6.0f * MXA_E4M3_MAX);
}

void mxa_nvfp4_quantize_block(const float *x, int n, float ts, uint8_t codes[MXA_NVFP4_BLOCK],
                              uint8_t *scale)
{
    float max_abs = 0.0f;
    int finite = 1;
    if (n > MXA_NVFP4_BLOCK) n = MXA_NVFP4_BLOCK;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) finite = 0;
        if (fabsf(x[i]) > max_abs) max_abs = fabsf(x[i]);
    }
    memset(codes, 0, MXA_NVFP4_BLOCK);
    if (!finite) {
        *scale = 0x7F; /* NaN block, as MXFP4's 0xFF scale */
        return;
    }
    *scale = mxa_e4m3_encode(max_abs / (6.0f * ts));
    const float denom = mxa_e4m3_decode(*scale) * ts;
    for (int i = 0; i < n; i++) {
        uint8_t sign = signbit(x[i]) ? 8 : 0;
        /* A zero block scale (underflow) leaves every element at zero. */
        codes[i] = (uint8_t)(sign | (denom > 0.0f ? mxa_e2m1_code(fabsf(x[i]) / denom) : 0));
    }
}

float mxa_nvfp4_decode(uint8_t code, uint8_t scale, float ts)
{
    float v = (mxa_e2m1_values[code & 7] * mxa_e4m3_decode(scale)) * ts;
    return (code & 8) ? -v : v;
}

void mxa_nvfp4_fake_quantize_strided(float *x, int64_t n, int64_t stride, float ts)
{
    for (int64_t b = 0; b < n; b += MXA_NVFP4_BLOCK) {
        const int len = (int)(n - b < MXA_NVFP4_BLOCK ? n - b : MXA_NVFP4_BLOCK);
        float block[MXA_NVFP4_BLOCK];
        uint8_t codes[MXA_NVFP4_BLOCK], scale;
        for (int i = 0; i < len; i++) block[i] = x[(b + i) * stride];
        mxa_nvfp4_quantize_block(block, len, ts, codes, &scale);
        for (int i = 0; i < len; i++) x[(b + i) * stride] = mxa_nvfp4_decode(codes[i], scale, ts);
    }
}

void mxa_nvfp4_fake_quantize(float *x, int64_t n, float ts)
{
    mxa_nvfp4_fake_quantize_strided(x, n, 1, ts);
}
