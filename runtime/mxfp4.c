/* MXFP4 block quantization, SPEC §1, computed from the fp32 bits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mxfp4.h"
#include "status.h"

const float mxa_e2m1_values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

const int8_t mxa_e2m1_doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

int mxa_rule_valid(mxa_rule rule)
{
    if (rule.kind == MXA_RULE_OCP) return 1;
    return rule.kind == MXA_RULE_CEIL && rule.q >= 6.0f && rule.q <= 8.0f;
}

int mxa_shared_exponent(float max_abs, mxa_rule rule)
{
    uint32_t bits = float_bits(max_abs) & 0x7fffffffu;
    if (bits == 0) return 0;
    uint32_t biased = bits >> 23;
    if (biased == 0) return -127; /* subnormal maximum: the smallest scale */
    int e = (int)biased - 127 - 2; /* OCP: floor(log2 M) - 2 */
    if (rule.kind == MXA_RULE_CEIL) {
        /* e = min{k : M <= q 2^k}. With M = m 2^E, m in [1, 2), q in [6, 8], the
         * answer is E-3, E-2 or E-1; m and q are exact in double. */
        double m = 1.0 + (double)(bits & 0x7fffffu) / 8388608.0;
        double q = rule.q;
        if (8.0 * m <= q)
            e -= 1;
        else if (!(4.0 * m <= q))
            e += 1;
    }
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return e;
}

uint8_t mxa_e2m1_code(float v)
{
    /* Round to nearest, ties to the even code; saturate at 6. */
    if (v <= 0.25f) return 0;
    if (v < 0.75f) return 1;
    if (v <= 1.25f) return 2;
    if (v < 1.75f) return 3;
    if (v <= 2.5f) return 4;
    if (v < 3.5f) return 5;
    if (v <= 5.0f) return 6;
    return 7;
}

void mxa_quantize_block(const float *x, int n, mxa_rule rule, uint8_t codes[MXA_BLOCK],
                        uint8_t *scale)
{
    float max_abs = 0.0f;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) finite = 0;
        float a = fabsf(x[i]);
        if (a > max_abs) max_abs = a;
    }
    memset(codes, 0, MXA_BLOCK);
    if (!finite) {
        *scale = MXA_E8M0_NAN;
        return;
    }
    int e = (max_abs == 0.0f) ? 0 : mxa_shared_exponent(max_abs, rule);
    *scale = (uint8_t)(e + 127);
    for (int i = 0; i < n; i++) {
        uint8_t sign = signbit(x[i]) ? 8 : 0;
        codes[i] = (uint8_t)(sign | mxa_e2m1_code(ldexpf(fabsf(x[i]), -e)));
    }
}

void mxa_quantize_row(const float *x, int64_t n, mxa_rule rule, uint8_t *packed, uint8_t *scales)
{
    int64_t nblocks = (n + MXA_BLOCK - 1) / MXA_BLOCK;
    for (int64_t b = 0; b < nblocks; b++) {
        uint8_t codes[MXA_BLOCK];
        int64_t left = n - b * MXA_BLOCK;
        mxa_quantize_block(x + b * MXA_BLOCK, (int)(left < MXA_BLOCK ? left : MXA_BLOCK), rule,
                           codes, &scales[b]);
        for (int i = 0; i < MXA_BLOCK / 2; i++)
            packed[b * 16 + i] = (uint8_t)(codes[2 * i] | (codes[2 * i + 1] << 4));
    }
}

float mxa_decode(uint8_t code, uint8_t scale)
{
    if (scale == MXA_E8M0_NAN) return NAN;
    float v = ldexpf(mxa_e2m1_values[code & 7], (int)scale - 127);
    return (code & 8) ? -v : v;
}

void mxa_fake_quantize_block(float *x, int n, mxa_rule rule)
{
    uint8_t codes[MXA_BLOCK], scale;
    mxa_quantize_block(x, n, rule, codes, &scale);
    for (int i = 0; i < n; i++) x[i] = mxa_decode(codes[i], scale);
}

mxa_status mxa_dequantize(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols,
                          float *out)
{
    if (!codes || !scales || !out)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_dequantize: codes, scales and out must not be NULL");
    if (rows <= 0 || cols <= 0)
        return mxa_fail(MXA_ERR_INVALID_ARGUMENT, "mxa_dequantize: rows (%lld) and cols (%lld) must be positive",
                        (long long)rows, (long long)cols);
    int64_t nblocks = (cols + MXA_BLOCK - 1) / MXA_BLOCK;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            uint8_t byte = codes[r * nblocks * 16 + c / 2];
            uint8_t code = (c & 1) ? (byte >> 4) : (byte & 15);
            out[r * cols + c] = mxa_decode(code, scales[r * nblocks + c / MXA_BLOCK]);
        }
    return MXA_OK;
}

mxa_rule mxa_rule_ocp(void) { return (mxa_rule){MXA_RULE_OCP, 0.0f}; }
mxa_rule mxa_rule_tfs(void) { return (mxa_rule){MXA_RULE_CEIL, 6.0f}; }
mxa_rule mxa_rule_uos(void) { return (mxa_rule){MXA_RULE_CEIL, 7.25f}; }
