/*
 * libFuzzer target: mxa_quantize on the CPU device and mxa_dequantize.
 * Input: byte 0 picks the rule (ocp, tfs, uos, or q in [6, 8]); byte 1 the
 * input dtype (bit 0: float16) and byte 2 the row length (1..96, so tails
 * occur); the rest is the data. Every block is checked against SPEC §1 from
 * first principles, in double: the shared exponent is the rule's, every code
 * is a nearest E2M1 value (ties to the even code, saturating at 6), padding
 * is zero, and dequantization decodes exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mxa/mxa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const double e2m1[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

static double half_to_double(uint16_t h)
{
    const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0x1f ? (man ? NAN : INFINITY) : exp == 0 ? ldexp(man, -24) : ldexp(man | 0x400, exp - 25);
    return (h & 0x8000) ? -v : v;
}

static void check_block(const double *x, int n, mxa_rule rule, const uint8_t *codes, uint8_t scale, const float *deq)
{
    int finite = 1;
    double m = 0.0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) finite = 0;
        else if (fabs(x[i]) > m) m = fabs(x[i]);
    }
    int c[32];
    for (int i = 0; i < 32; i++) c[i] = (codes[i / 2] >> (4 * (i & 1))) & 15;
    for (int i = n; i < 32; i++)
        if (c[i] != 0) abort(); /* padding stays zero */
    if (!finite) {
        if (scale != 0xFF) abort();
        for (int i = 0; i < 32; i++)
            if (c[i]) abort();
        for (int i = 0; i < n; i++)
            if (!isnan(deq[i])) abort();
        return;
    }
    if (scale == 0xFF) abort();
    const int e = (int)scale - 127;
    if (m == 0.0) {
        if (e != 0) abort();
    } else if (m < 0x1p-126) {
        if (e != -127) abort();
    } else {
        int big_e;
        frexp(m, &big_e);
        big_e -= 1; /* m = mantissa * 2^big_e, mantissa in [1, 2) */
        if (rule.kind == MXA_RULE_OCP) {
            int want = big_e - 2;
            if (want < -127) want = -127;
            if (want > 127) want = 127;
            if (e != want) abort();
        } else {
            const double q = rule.q;
            if (e < 127 && !(m <= ldexp(q, e))) abort();  /* big enough */
            if (e > -127 && !(m > ldexp(q, e - 1))) abort(); /* the smallest such */
        }
    }
    for (int i = 0; i < n; i++) {
        const int sign = (c[i] >> 3) & 1, mag = c[i] & 7;
        if (sign != (signbit(x[i]) ? 1 : 0)) abort();
        const double v = ldexp(fabs(x[i]), -e); /* exact in double */
        if (v > 6.0) {
            if (mag != 7) abort();
        } else {
            const double d = fabs(e2m1[mag] - v);
            for (int k = 0; k < 8; k++) {
                const double dk = fabs(e2m1[k] - v);
                if (dk < d || (dk == d && k != mag && (mag & 1))) abort(); /* nearest, ties to even */
            }
        }
        const float want = (float)((sign ? -1.0 : 1.0) * ldexp(e2m1[mag], e));
        if (memcmp(&want, &deq[i], sizeof want) != 0) abort(); /* bit for bit, -0 included */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mxa_runtime *rt;
    static mxa_device *dev;
    if (!dev && (mxa_runtime_create(NULL, &rt) != MXA_OK || mxa_device_open(rt, "cpu", &dev) != MXA_OK)) abort();
    if (size < 3) return 0;
    mxa_rule rule = data[0] == 0 ? mxa_rule_ocp() : data[0] == 1 ? mxa_rule_tfs() : data[0] == 2 ? mxa_rule_uos()
                  : (mxa_rule){MXA_RULE_CEIL, 6.0f + (float)(data[0] % 201) / 100.0f};
    const int f16 = data[1] & 1;
    const int64_t cols = 1 + data[2] % 96, esize = f16 ? 2 : 4;
    const int64_t rows = (int64_t)((size - 3) / (size_t)esize) / cols;
    if (rows < 1 || rows > 64) return 0;
    const int64_t nblocks = (cols + 31) / 32, n = rows * cols;
    void *in = malloc((size_t)(n * esize));
    double *x = malloc((size_t)n * sizeof(double));
    uint8_t *codes = malloc((size_t)(rows * nblocks * 16)), *scales = malloc((size_t)(rows * nblocks));
    float *deq = malloc((size_t)n * sizeof(float));
    if (!in || !x || !codes || !scales || !deq) abort();
    memcpy(in, data + 3, (size_t)(n * esize));
    for (int64_t i = 0; i < n; i++) {
        if (f16) {
            uint16_t h;
            memcpy(&h, (uint8_t *)in + 2 * i, 2);
            x[i] = half_to_double(h);
        } else {
            float f;
            memcpy(&f, (uint8_t *)in + 4 * i, 4);
            x[i] = f;
        }
    }
    mxa_tensor t;
    if (mxa_tensor_init(&t, f16 ? MXA_F16 : MXA_F32, 1, 1, rows, cols, in) != MXA_OK) abort();
    if (mxa_quantize(dev, &t, rule, codes, scales) != MXA_OK) abort();
    if (mxa_dequantize(codes, scales, rows, cols, deq) != MXA_OK) abort();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nblocks; b++) {
            const int64_t at = r * cols + b * 32;
            const int len = (int)(cols - b * 32 < 32 ? cols - b * 32 : 32);
            check_block(x + at, len, rule, codes + (r * nblocks + b) * 16, scales[r * nblocks + b], deq + at);
        }
    free(in);
    free(x);
    free(codes);
    free(scales);
    free(deq);
    return 0;
}
