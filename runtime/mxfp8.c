/* MXFP8 (E4M3) block quantization from the fp32 bits; see mxfp8.h and the README. */
#include <math.h>
#include <string.h>

#include "mxfp4.h"
#include "mxfp8.h"
#include "status.h"

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

int mxa_mxfp8_exponent(float max_abs)
{
    const uint32_t bits = float_bits(max_abs) & 0x7fffffffu;
    if (bits == 0) return 0;
    const int biased = (int)(bits >> 23);
    if (biased == 0) return -127; /* subnormal maximum: the smallest scale */
    const int e = biased - 127 - 8; /* E4M3's largest binade is 2^8 */
    return e < -127 ? -127 : e;     /* biased <= 254 keeps e <= 119 */
}

uint8_t mxa_e4m3_code(float v)
{
    if (!(v < 448.0f)) return MXA_E4M3_MAX_CODE; /* saturate (v is finite) */
    const uint32_t bits = float_bits(v);
    const int exp = (int)(bits >> 23) - 127;
    if (exp >= -6) { /* normal in E4M3: keep 3 fraction bits, round the other 20 to even */
        const uint32_t frac = bits & 0x7fffffu, keep = frac >> 20, rest = frac & 0xfffffu;
        const uint32_t up = rest > 0x80000u || (rest == 0x80000u && (keep & 1));
        const uint32_t code = ((uint32_t)(exp + 7) << 3) + keep + up; /* a carry moves to the next binade */
        return (uint8_t)(code > MXA_E4M3_MAX_CODE ? MXA_E4M3_MAX_CODE : code);
    }
    /* subnormal in E4M3: multiples of 2^-9; v * 2^9 < 8 is exact */
    const float s = v * 512.0f;
    const uint32_t whole = (uint32_t)s;
    const float frac = s - (float)whole;
    const uint32_t up = frac > 0.5f || (frac == 0.5f && (whole & 1));
    return (uint8_t)(whole + up); /* 8 is the smallest normal, 2^-6: the same code */
}

int32_t mxa_e4m3_scaled(uint8_t code)
{
    code &= 0x7f;
    if (code == 0x7f) return 0;
    const int exp = code >> 3, man = code & 7;
    return exp == 0 ? man : (8 + man) << (exp - 1);
}

void mxa_mxfp8_quantize_block(const float *x, int n, uint8_t codes[MXA_BLOCK], uint8_t *scale)
{
    float max_abs = 0.0f;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) finite = 0;
        const float a = fabsf(x[i]);
        if (a > max_abs) max_abs = a;
    }
    memset(codes, 0, MXA_BLOCK);
    if (!finite) {
        *scale = MXA_E8M0_NAN;
        return;
    }
    const int e = mxa_mxfp8_exponent(max_abs);
    *scale = (uint8_t)(e + 127);
    for (int i = 0; i < n; i++)
        codes[i] = (uint8_t)((signbit(x[i]) ? 0x80 : 0) | mxa_e4m3_code(ldexpf(fabsf(x[i]), -e)));
}

void mxa_mxfp8_quantize_row(const float *x, int64_t n, uint8_t *codes, uint8_t *scales)
{
    const int64_t nblocks = (n + MXA_BLOCK - 1) / MXA_BLOCK;
    for (int64_t b = 0; b < nblocks; b++) {
        const int64_t left = n - b * MXA_BLOCK;
        mxa_mxfp8_quantize_block(x + b * MXA_BLOCK, (int)(left < MXA_BLOCK ? left : MXA_BLOCK),
                                 codes + b * MXA_BLOCK, &scales[b]);
    }
}

float mxa_mxfp8_decode(uint8_t code, uint8_t scale)
{
    if (scale == MXA_E8M0_NAN) return NAN;
    const float v = ldexpf((float)mxa_e4m3_scaled(code), (int)scale - 127 - 9);
    return (code & 0x80) ? -v : v;
}

mxa_status mxa_dequantize_mxfp8(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols, float *out)
{
    if (!codes || !scales || !out)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_dequantize_mxfp8: codes, scales and out must not be NULL");
    if (rows <= 0 || cols <= 0)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_dequantize_mxfp8: rows (%lld) and cols (%lld) must be positive",
                        (long long)rows, (long long)cols);
    const int64_t nblocks = (cols + MXA_BLOCK - 1) / MXA_BLOCK;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            out[r * cols + c] = mxa_mxfp8_decode(codes[r * nblocks * MXA_BLOCK + c], scales[r * nblocks + c / MXA_BLOCK]);
    return MXA_OK;
}
