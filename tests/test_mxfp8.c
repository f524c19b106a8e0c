/*
 * The MXFP8 (E4M3) format core against an independent exact model: every code,
 * every rounding boundary and tie (normal and subnormal) under scales across the
 * whole E8M0 range, saturation, zero and non-finite blocks, scale extremes, and
 * random blocks of every magnitude; the layout of mxa_dequantize_mxfp8 and
 * mxa_quantize_mxfp8 on the CPU device.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/mxfp4.h"
#include "runtime/mxfp8.h"
#include "testutil.h"

/* ------------------------------------------------------- the exact model */

/* The 127 finite E4M3 magnitudes as integers times 2^-9, built from the format's
 * description (subnormals k 2^-9, normals (8 + m) 2^(E - 3) for E in [-6, 8], the
 * top mantissa of E = 8 being NaN), in increasing order; the index is the code. */
static int64_t grid[127];

static void grid_build(void)
{
    int n = 0;
    for (int k = 0; k < 8; k++) grid[n++] = k; /* 0 .. 7 * 2^-9 */
    for (int e = -6; e <= 8; e++)
        for (int m = 0; m < 8 && n < 127; m++) grid[n++] = (int64_t)(8 + m) << (e + 6); /* (8+m) 2^(e-3) in units of 2^-9 */
    assert_int_equal(n, 127);
    assert_true(grid[126] == 448 * 512);
}

/* |x| = m * 2^ex with m an integer < 2^24. */
static void split(float x, int64_t *m, int *ex)
{
    int e2;
    const double f = frexp(fabs((double)x), &e2);
    *m = (int64_t)ldexp(f, 24);
    *ex = e2 - 24;
}

/* floor(log2 M) - 8 clamped to [-127, 127]; 0 for M = 0. */
static int model_exponent(float max_abs)
{
    if (max_abs == 0.0f) return 0;
    int64_t m;
    int ex;
    split(max_abs, &m, &ex);
    const int e = ex + (63 - __builtin_clzll((unsigned long long)m)) - 8;
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/* The code of the grid value nearest to |x| 2^-e, ties to the even code, saturating. */
static int model_code(float x, int e)
{
    int64_t m;
    int ex;
    split(x, &m, &ex);
    const int s = ex - e + 9; /* |x| 2^-e in units of 2^-9 is m 2^s */
    if (m == 0 || s < -80) return 0;
    int best = 0;
    __int128 best_dist = -1;
    for (int c = 0; c < 127; c++) {
        __int128 v = m, g = grid[c];
        if (s >= 0) v <<= s; else g <<= -s;
        const __int128 dist = v > g ? v - g : g - v;
        if (best_dist < 0 || dist < best_dist || (dist == best_dist && (c & 1) == 0)) {
            best = c;
            best_dist = dist;
        }
    }
    return best;
}

static uint8_t model_block(const float *x, uint8_t codes[32])
{
    float max_abs = 0.0f;
    for (int i = 0; i < 32; i++) {
        if (!isfinite(x[i])) {
            memset(codes, 0, 32);
            return 0xFF;
        }
        if (fabsf(x[i]) > max_abs) max_abs = fabsf(x[i]);
    }
    const int e = model_exponent(max_abs);
    for (int i = 0; i < 32; i++) codes[i] = (uint8_t)((signbit(x[i]) ? 0x80 : 0) | model_code(x[i], e));
    return (uint8_t)(e + 127);
}

static void check_block(const float *x)
{
    uint8_t codes[32], mcodes[32], scale;
    mxa_mxfp8_quantize_block(x, 32, codes, &scale);
    const uint8_t mscale = model_block(x, mcodes);
    if (scale != mscale || memcmp(codes, mcodes, 32) != 0) {
        for (int i = 0; i < 32; i++)
            if (codes[i] != mcodes[i]) print_message("x[%d] = %a: code 0x%02x, model 0x%02x\n", i, (double)x[i], codes[i], mcodes[i]);
        print_message("scale %d, model %d\n", scale, mscale);
    }
    assert_int_equal(scale, mscale);
    assert_memory_equal(codes, mcodes, 32);
}

/* --------------------------------------------------------------- vectors */

static void test_vectors(void **state)
{
    (void)state;
    grid_build();
    /* a block pinned to e = 0 by 256 (floor(log2 256) - 8 = 0): codes are E4M3 of the values */
    const struct { float x; uint8_t code; } table[] = {
        {256.0f, 0x78}, {448.0f, 0x7E}, {464.0f, 0x7E} /* a tie between 448 and (NaN) 480: saturates */,
        {1.0f, 0x38}, {-1.0f, 0xB8}, {1.0625f, 0x38} /* tie 1 | 1.125 -> even 1 */, {1.1875f, 0x3A} /* tie -> 1.25 */,
        {0x1p-6f, 0x08}, {0x1p-9f, 0x01}, {0x1p-10f, 0x00} /* tie 0 | 2^-9 -> 0 */, {0x3p-10f, 0x02} /* tie -> 2 */,
        {0x1.8p-9f * 1.0f, 0x02}, {0xFp-10f, 0x08} /* 7.5 2^-9 ties to 8 2^-9 = 2^-6 */, {-0.0f, 0x80}, {0.1f, 0x1D},
        {3.0f, 0x44}, {240.0f, 0x77}, {248.0f, 0x78} /* tie 240 | 256 -> even 256 */,
    };
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        float block[32] = {256.0f};
        block[1] = table[t].x;
        uint8_t codes[32], scale;
        mxa_mxfp8_quantize_block(block, 32, codes, &scale);
        assert_int_equal(scale, 127);
        if (codes[1] != table[t].code) print_message("%a: 0x%02x, expected 0x%02x\n", (double)table[t].x, codes[1], table[t].code);
        assert_int_equal(codes[1], table[t].code);
        check_block(block);
    }
    /* scale bytes: floor(log2 M) - 8 */
    assert_int_equal(mxa_mxfp8_exponent(1.0f), -8);
    assert_int_equal(mxa_mxfp8_exponent(448.0f), 0);
    assert_int_equal(mxa_mxfp8_exponent(nextafterf(512.0f, 0.0f)), 0);
    assert_int_equal(mxa_mxfp8_exponent(512.0f), 1);
    assert_int_equal(mxa_mxfp8_exponent(FLT_MAX), 119);
    assert_int_equal(mxa_mxfp8_exponent(0x1p-119f), -127);
    assert_int_equal(mxa_mxfp8_exponent(0x1p-118f), -126);
    assert_int_equal(mxa_mxfp8_exponent(0x1p-126f), -127);
    assert_int_equal(mxa_mxfp8_exponent(0x1p-149f), -127); /* subnormal */
    assert_int_equal(mxa_mxfp8_exponent(0.0f), 0);
    /* the block maximum is never saturated below its own binade: M 2^-e is in [256, 512) */
    float top[32] = {FLT_MAX, -FLT_MAX, 1.0f};
    check_block(top);
    uint8_t codes[32], scale;
    mxa_mxfp8_quantize_block(top, 32, codes, &scale);
    assert_int_equal(scale, 127 + 119);
    assert_int_equal(codes[0], 0x7E);
    assert_int_equal(codes[1], 0xFE);
    assert_true(mxa_mxfp8_decode(codes[0], scale) == 448.0f * 0x1p119f);
    /* zero block: scale 0x7F, codes the sign bit alone */
    float zero[32] = {0.0f, -0.0f};
    mxa_mxfp8_quantize_block(zero, 32, codes, &scale);
    assert_int_equal(scale, 0x7F);
    assert_int_equal(codes[0], 0x00);
    assert_int_equal(codes[1], 0x80);
    /* non-finite blocks: scale 0xFF, every code 0, decodes to NaN */
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        float block[32] = {1.0f, 2.0f};
        block[5] = bad[b];
        mxa_mxfp8_quantize_block(block, 32, codes, &scale);
        assert_int_equal(scale, 0xFF);
        for (int i = 0; i < 32; i++) assert_int_equal(codes[i], 0);
        assert_true(isnan(mxa_mxfp8_decode(codes[0], scale)));
        check_block(block);
    }
    /* a short tail is zero padding */
    float tail[3] = {3.0f, -5.0f, 0.25f};
    mxa_mxfp8_quantize_block(tail, 3, codes, &scale);
    assert_int_equal(scale, 127 + 2 - 8);
    for (int i = 3; i < 32; i++) assert_int_equal(codes[i], 0);
}

/* ------------------------------------------- every code, boundary and tie */

static void test_every_code_and_boundary(void **state)
{
    (void)state;
    grid_build();
    long checked = 0;
    for (int e = -127; e <= 119; e++) {
        const float pin = ldexpf(256.0f, e); /* floor(log2 pin) - 8 = e (normal for every e here) */
        /* every code round-trips at this scale */
        for (int c = 0; c < 127; c++) {
            float block[32] = {pin};
            block[1] = ldexpf((float)grid[c], e - 9);
            block[2] = -block[1];
            uint8_t codes[32], scale;
            mxa_mxfp8_quantize_block(block, 32, codes, &scale);
            assert_int_equal(scale, e + 127);
            assert_int_equal(codes[1], c);
            assert_int_equal(codes[2], 0x80 | c);
            assert_true(mxa_mxfp8_decode(codes[1], scale) == block[1]);
            assert_int_equal(mxa_e4m3_scaled((uint8_t)c), grid[c]);
        }
        /* every midpoint (a tie) and its float neighbours, 31 at a time */
        for (int c0 = 0; c0 < 127; c0 += 10) {
            float block[32] = {pin};
            int n = 1;
            for (int c = c0; c < c0 + 10 && c < 127; c++) {
                /* the midpoint above code c; above 448 the next value would be 480 */
                const int64_t hi = c < 126 ? grid[c + 1] : 480 * 512;
                const float t = ldexpf((float)(grid[c] + hi) * 0.5f, e - 9);
                block[n++] = nextafterf(t, 0.0f);
                block[n++] = t;
                block[n++] = nextafterf(t, INFINITY);
            }
            check_block(block);
            checked++;
        }
        /* saturation: (448, 512) 2^e is 448 2^e */
        float sat[32] = {pin, ldexpf(449.0f, e), ldexpf(479.0f, e), ldexpf(480.0f, e), ldexpf(511.9f, e)};
        check_block(sat);
        uint8_t codes[32], scale;
        mxa_mxfp8_quantize_block(sat, 32, codes, &scale);
        for (int i = 1; i < 5; i++) assert_int_equal(codes[i], 0x7E);
        checked++;
    }
    /* subnormal block maxima: scale 2^-127, elements |x| 2^127 < 2 */
    for (int k = 1; k < 24; k++) {
        float block[32];
        for (int i = 0; i < 32; i++) block[i] = ldexpf((float)(i + 1), -149 + k) * ((i & 1) ? -1.0f : 1.0f);
        check_block(block);
        checked++;
    }
    print_message("boundary blocks checked: %ld\n", checked);
}

/* ---------------------------------------------------------- random blocks */

static float random_float(tu_rng *rng, int lo_exp, int hi_exp)
{
    const uint64_t r = tu_next(rng);
    const int kind = (int)(r % 16);
    if (kind == 0) return 0.0f;
    uint32_t bits;
    if (kind == 1) {
        bits = (uint32_t)((r >> 8) & 0x7fffffu);
    } else {
        const int exp = lo_exp + (int)((r >> 4) % (uint64_t)(hi_exp - lo_exp + 1));
        bits = (uint32_t)(((uint64_t)(exp + 127) << 23) | ((r >> 20) & 0x7fffffu));
        if (kind == 2) bits &= ~0xfffffu; /* few fraction bits: many exact ties */
    }
    if (r & (1ull << 60)) bits |= 0x80000000u;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void test_random_blocks(void **state)
{
    (void)state;
    grid_build();
    tu_rng rng = {20261201};
    long mismatches = 0;
    const int blocks = 100000;
    for (int n = 0; n < blocks; n++) {
        float block[32];
        const int centre = -126 + (int)(tu_next(&rng) % 254), width = 1 + (int)(tu_next(&rng) % 20);
        const int lo = centre - width < -126 ? -126 : centre - width, hi = centre > 127 ? 127 : centre;
        for (int i = 0; i < 32; i++) block[i] = random_float(&rng, lo, hi);
        uint8_t codes[32], mcodes[32], scale;
        mxa_mxfp8_quantize_block(block, 32, codes, &scale);
        if (scale != model_block(block, mcodes) || memcmp(codes, mcodes, 32) != 0) mismatches++;
    }
    print_message("random blocks: %d, mismatches: %ld\n", blocks, mismatches);
    assert_int_equal(mismatches, 0);
}

/* ------------------------------------------------ layout and the device */

static void test_dequantize_and_device(void **state)
{
    (void)state;
    tu_rng rng = {11};
    enum { ROWS = 3, COLS = 45, NB = 2 };
    float x[ROWS * COLS], y[ROWS * COLS];
    tu_fill_normal(&rng, x, ROWS * COLS, 5.0f);
    x[7] = 0x1p-140f;
    uint8_t codes[ROWS * NB * 32], scales[ROWS * NB];
    for (int r = 0; r < ROWS; r++) mxa_mxfp8_quantize_row(x + r * COLS, COLS, codes + r * NB * 32, scales + r * NB);
    assert_int_equal(mxa_dequantize_mxfp8(codes, scales, ROWS, COLS, y), MXA_OK);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const int b = c / 32;
            assert_true(y[r * COLS + c] == mxa_mxfp8_decode(codes[(r * NB + b) * 32 + c % 32], scales[r * NB + b]));
            /* MXFP8 keeps 3 fraction bits: relative error <= 2^-4 for values that are normal in E4M3 */
            const float m = ldexpf(1.0f, (int)scales[r * NB + b] - 127 - 6);
            if (fabsf(x[r * COLS + c]) >= m) assert_true(fabsf(y[r * COLS + c] - x[r * COLS + c]) <= fabsf(x[r * COLS + c]) / 16);
        }
    assert_int_equal(mxa_dequantize_mxfp8(NULL, scales, ROWS, COLS, y), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_dequantize_mxfp8(codes, scales, ROWS, 0, y), MXA_ERR_INVALID_ARGUMENT);

    /* the CPU device gives the format core's bytes, for a float16 strided view too */
    mxa_runtime *rt;
    mxa_device *dev;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    mxa_tensor t = tu_tensor(x, 1, 1, ROWS, COLS);
    uint8_t dcodes[sizeof codes], dscales[sizeof scales];
    memset(dcodes, 0xAA, sizeof dcodes);
    assert_int_equal(mxa_quantize_mxfp8(dev, &t, dcodes, dscales), MXA_OK);
    assert_memory_equal(dcodes, codes, sizeof codes);
    assert_memory_equal(dscales, scales, sizeof scales);
    assert_int_equal(mxa_quantize_mxfp8(dev, &t, NULL, dscales), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_quantize_mxfp8(NULL, &t, dcodes, dscales), MXA_ERR_INVALID_ARGUMENT);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_every_code_and_boundary),
        cmocka_unit_test(test_random_blocks),
        cmocka_unit_test(test_dequantize_and_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
