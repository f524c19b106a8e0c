/*
 * The MXFP4 format core against SPEC §1: the vector table, every boundary
 * q*2^k +- 1 ulp, and 10^6 random blocks of every magnitude checked against an
 * independent exact model (integer arithmetic on mantissas and exponents).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/mxfp4.h"
#include "testutil.h"

/* ------------------------------------------------------- the exact model */

/* |x| = m * 2^ex with m an integer < 2^24 (exact for every finite float). */
static void split(float x, int64_t *m, int *ex)
{
    int e2;
    double f = frexp(fabs((double)x), &e2); /* f in [0.5, 1) */
    *m = (int64_t)ldexp(f, 24);
    *ex = e2 - 24;
}

/* Compares a = ma 2^ea with b = mb 2^eb exactly: -1, 0, 1. */
static int cmp_exact(int64_t ma, int ea, int64_t mb, int eb)
{
    if (ma == 0 || mb == 0) return (ma > mb) - (ma < mb);
    /* bring both to the smaller exponent; differences beyond 80 decide by magnitude */
    int d = ea - eb;
    if (d > 80) return 1;
    if (d < -80) return -1;
    __int128 a = ma, b = mb;
    if (d > 0) a <<= d; else b <<= -d;
    return (a > b) - (a < b);
}

/* Shared exponent by definition: OCP e = floor(log2 M) - 2; ceiling rule
 * e = min{k : M <= q 2^k}; clamped to [-127, 127]. */
static int model_exponent(float max_abs, mxa_rule rule)
{
    if (max_abs == 0.0f) return 0;
    int64_t m;
    int ex;
    split(max_abs, &m, &ex);
    int e;
    if (rule.kind == MXA_RULE_OCP) {
        int top = 63 - __builtin_clzll((unsigned long long)m); /* floor(log2 m) */
        e = ex + top - 2;
    } else {
        int64_t mq;
        int eq;
        split(rule.q, &mq, &eq);
        e = 400;
        for (int k = -420; k <= 200; k++) /* smallest k with M <= q 2^k */
            if (cmp_exact(m, ex, mq, eq + k) <= 0) {
                e = k;
                break;
            }
    }
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/* Nearest E2M1 value to |x| 2^-e, ties to the even code, saturating at 6. */
static int model_code(float x, int e)
{
    static const int grid4[8] = {0, 2, 4, 6, 8, 12, 16, 24}; /* 4 * E2M1 value */
    int64_t m;
    int ex;
    split(x, &m, &ex);
    int s = ex - e + 2; /* 4 v = m 2^s */
    if (m == 0 || s < -60) return 0;
    int best = 0;
    __int128 best_dist = -1;
    for (int c = 0; c < 8; c++) {
        __int128 v = m, g = grid4[c];
        if (s >= 0) v <<= s; else g <<= -s;
        __int128 dist = v > g ? v - g : g - v;
        if (best_dist < 0 || dist < best_dist || (dist == best_dist && (c & 1) == 0 && (best & 1))) {
            best = c;
            best_dist = dist;
        }
    }
    return best;
}

/* The whole block by the model; returns the scale byte, fills codes. */
static uint8_t model_block(const float *x, mxa_rule rule, uint8_t codes[32])
{
    float max_abs = 0.0f;
    for (int i = 0; i < 32; i++) {
        if (!isfinite(x[i])) {
            memset(codes, 0, 32);
            return 0xFF;
        }
        if (fabsf(x[i]) > max_abs) max_abs = fabsf(x[i]);
    }
    int e = model_exponent(max_abs, rule);
    for (int i = 0; i < 32; i++) codes[i] = (uint8_t)((signbit(x[i]) ? 8 : 0) | model_code(x[i], e));
    return (uint8_t)(e + 127);
}

static mxa_rule rule_q(float q) { return (mxa_rule){MXA_RULE_CEIL, q}; }

/* ------------------------------------------------------- SPEC §1 vectors */

typedef struct vector {
    float x[5];
    int n;
    int e[3];         /* OCP, TFS, UOS */
    uint8_t code[3][5];
} vector;

static void check_vector(const vector *v)
{
    const mxa_rule rules[3] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos()};
    for (int r = 0; r < 3; r++) {
        float block[32] = {0};
        memcpy(block, v->x, (size_t)v->n * sizeof(float));
        uint8_t codes[32], scale;
        mxa_quantize_block(block, 32, rules[r], codes, &scale);
        assert_int_equal(scale, v->e[r] + 127);
        for (int i = 0; i < v->n; i++) assert_int_equal(codes[i], v->code[r][i]);
        for (int i = v->n; i < 32; i++) assert_int_equal(codes[i], 0);
        /* the independent model agrees on the vector too */
        uint8_t mcodes[32];
        assert_int_equal(model_block(block, rules[r], mcodes), scale);
        assert_memory_equal(mcodes, codes, 32);
    }
}

#define SAME3(...) {{__VA_ARGS__}, {__VA_ARGS__}, {__VA_ARGS__}}
static void test_spec_vectors(void **state)
{
    (void)state;
    const float one_ulp = 0x1p-23f;
    const vector table[] = {
        {{6, 0.25f, 0.75f, 1.25f, 1.75f}, 5, {0, 0, 0}, SAME3(7, 0, 2, 2, 4)},
        {{6, 2.5f, 3.5f, 5, 5.5f}, 5, {0, 0, 0}, SAME3(7, 4, 6, 6, 7)},
        {{-6, -0.0f, -0.25f, -2.5f, 0.1f}, 5, {0, 0, 0}, SAME3(0xF, 8, 8, 0xC, 0)},
        {{1, 0.0625f, 0.1875f, 0.375f}, 4, {-2, -2, -2}, SAME3(6, 0, 2, 3)},
        {{1.5f + one_ulp}, 1, {-2, -1, -2}, {{7}, {5}, {7}}},
        {{1.8125f}, 1, {-2, -1, -2}, {{7}, {6}, {7}}},
        {{1.8125f + one_ulp}, 1, {-2, -1, -1}, {{7}, {6}, {6}}},
        {{7, 3}, 2, {0, 1, 0}, {{7, 5}, {6, 3}, {7, 5}}},
        {{8.0f - 0x1p-21f}, 1, {0, 1, 1}, {{7}, {6}, {6}}},
        {{3 * 0x1p-128f}, 1, {-127, -127, -127}, SAME3(3)},
        {{FLT_MAX}, 1, {125, 126, 126}, {{7}, {6}, {6}}},
        {{0.0f, -0.0f}, 2, {0, 0, 0}, SAME3(0, 8)},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) check_vector(&table[i]);

    /* NaN, 1 -> scale 0xFF, all codes 0; Inf likewise */
    const float bad[2] = {NAN, INFINITY};
    for (int b = 0; b < 2; b++) {
        float block[32] = {bad[b], 1.0f};
        uint8_t codes[32], scale;
        mxa_quantize_block(block, 32, mxa_rule_uos(), codes, &scale);
        assert_int_equal(scale, 0xFF);
        for (int i = 0; i < 32; i++) assert_int_equal(codes[i], 0);
        assert_true(isnan(mxa_decode(0, scale)));
    }
    /* packing: 1, -0.5, 6, -6 -> bytes 0x92 0xF7 */
    float row[4] = {1.0f, -0.5f, 6.0f, -6.0f};
    uint8_t packed[16], scales[1];
    mxa_quantize_row(row, 4, mxa_rule_ocp(), packed, scales);
    assert_int_equal(scales[0], 127);
    assert_int_equal(packed[0], 0x92);
    assert_int_equal(packed[1], 0xF7);
    for (int i = 2; i < 16; i++) assert_int_equal(packed[i], 0);
}

/* The SPEC's note: 1.8125 + 2^-23 is one ulp above 1.8125 (fraction 0x680001). */
static void test_uos_fraction_boundary(void **state)
{
    (void)state;
    assert_int_equal(mxa_shared_exponent(1.8125f, mxa_rule_uos()), -2);
    assert_int_equal(mxa_shared_exponent(nextafterf(1.8125f, 2.0f), mxa_rule_uos()), -1);
    assert_int_equal(mxa_shared_exponent(1.5f, mxa_rule_tfs()), -2);
    assert_int_equal(mxa_shared_exponent(nextafterf(1.5f, 2.0f), mxa_rule_tfs()), -1);
    /* q = 8 differs from OCP only at exact powers of two */
    assert_int_equal(mxa_shared_exponent(4.0f, rule_q(8.0f)), -1);
    assert_int_equal(mxa_shared_exponent(4.0f, mxa_rule_ocp()), 0);
    assert_int_equal(mxa_shared_exponent(nextafterf(4.0f, 5.0f), rule_q(8.0f)), 0);
}

/* ------------------------------------------------- boundaries q 2^k +- ulp */

static void test_boundaries(void **state)
{
    (void)state;
    const float qs[] = {6.0f, 6.5f, 7.0f, 7.25f, 7.5f, 7.9f, 8.0f};
    int checked = 0;
    for (int r = -1; r < (int)(sizeof qs / sizeof qs[0]); r++) {
        mxa_rule rule = r < 0 ? mxa_rule_ocp() : rule_q(qs[r]);
        float q = r < 0 ? 8.0f : qs[r];
        for (int k = -152; k <= 127; k++) {
            float edge = ldexpf(q, k);
            if (!(edge > 0.0f) || !isfinite(edge)) continue;
            const float probes[3] = {nextafterf(edge, 0.0f), edge, nextafterf(edge, INFINITY)};
            for (int p = 0; p < 3; p++) {
                if (!isfinite(probes[p]) || probes[p] == 0.0f) continue;
                assert_int_equal(mxa_shared_exponent(probes[p], rule), model_exponent(probes[p], rule));
                /* also as a full block with a spread of smaller elements, incl. rounding ties */
                float block[32];
                for (int i = 0; i < 32; i++) block[i] = probes[p] * (float)(i + 1) / 32.0f * ((i & 1) ? -1.0f : 1.0f);
                uint8_t codes[32], mcodes[32], scale;
                mxa_quantize_block(block, 32, rule, codes, &scale);
                assert_int_equal(scale, model_block(block, rule, mcodes));
                assert_memory_equal(codes, mcodes, 32);
                checked++;
            }
        }
    }
    /* every E2M1 rounding boundary t 2^e and its neighbours, under a fixed scale */
    const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 7.0f};
    for (int e = -126; e <= 120; e += 7)
        for (size_t i = 0; i < sizeof mids / sizeof mids[0]; i++) {
            float block[32] = {0};
            block[0] = ldexpf(6.0f, e); /* pins the OCP exponent to e */
            const float t = ldexpf(mids[i], e);
            block[1] = nextafterf(t, 0.0f);
            block[2] = t;
            block[3] = nextafterf(t, INFINITY);
            uint8_t codes[32], mcodes[32], scale;
            mxa_quantize_block(block, 32, mxa_rule_ocp(), codes, &scale);
            assert_int_equal(scale, e + 127);
            assert_int_equal(model_block(block, mxa_rule_ocp(), mcodes), scale);
            assert_memory_equal(codes, mcodes, 32);
            checked++;
        }
    print_message("boundary blocks checked: %d\n", checked);
}

/* ---------------------------------------------------- random blocks */

static float random_float(tu_rng *rng, int lo_exp, int hi_exp)
{
    uint64_t r = tu_next(rng);
    int kind = (int)(r % 16);
    if (kind == 0) return 0.0f;
    if (kind == 1) { /* subnormal */
        uint32_t bits = (uint32_t)((r >> 8) & 0x7fffffu) | ((r & 0x100) ? 0x80000000u : 0);
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    int exp = lo_exp + (int)((r >> 4) % (uint64_t)(hi_exp - lo_exp + 1));
    uint32_t bits = (uint32_t)(((uint64_t)(exp + 127) << 23) | ((r >> 20) & 0x7fffffu));
    if (kind == 2) bits &= ~0x3fffffu; /* few fraction bits: many exact ties */
    if (r & (1ull << 60)) bits |= 0x80000000u;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void test_random_blocks(void **state)
{
    (void)state;
    tu_rng rng = {20261129};
    const mxa_rule rules[] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos(), rule_q(6.75f), rule_q(8.0f)};
    long mismatches = 0, blocks = 0;
    for (int n = 0; n < 1000000; n++) {
        float block[32];
        /* a block's magnitudes span a random window anywhere in the fp32 range */
        int centre = -126 + (int)(tu_next(&rng) % 254);
        int width = 1 + (int)(tu_next(&rng) % 24);
        int lo = centre - width < -126 ? -126 : centre - width, hi = centre > 127 ? 127 : centre;
        for (int i = 0; i < 32; i++) block[i] = random_float(&rng, lo, hi);
        mxa_rule rule = rules[n % 5];
        uint8_t codes[32], mcodes[32], scale;
        mxa_quantize_block(block, 32, rule, codes, &scale);
        uint8_t mscale = model_block(block, rule, mcodes);
        if (scale != mscale || memcmp(codes, mcodes, 32) != 0) mismatches++;
        blocks++;
    }
    print_message("random blocks: %ld, mismatches: %ld\n", blocks, mismatches);
    assert_int_equal(mismatches, 0);
}

/* Decoding inverts encoding on the grid, and dequantize follows the layout. */
static void test_decode_and_dequantize(void **state)
{
    (void)state;
    for (int c = 0; c < 16; c++) {
        float v = mxa_decode((uint8_t)c, 127 + 3);
        assert_true(v == (c & 8 ? -1.0f : 1.0f) * mxa_e2m1_values[c & 7] * 8.0f);
        assert_true(mxa_e2m1_doubled[c] == (int)(2.0f * mxa_decode((uint8_t)c, 127)));
    }
    tu_rng rng = {7};
    float x[2 * 45], y[2 * 45];
    tu_fill_normal(&rng, x, 90, 3.0f);
    uint8_t codes[2 * 32], scales[2 * 2];
    for (int r = 0; r < 2; r++) mxa_quantize_row(x + r * 45, 45, mxa_rule_uos(), codes + r * 32, scales + r * 2);
    assert_int_equal(mxa_dequantize(codes, scales, 2, 45, y), MXA_OK);
    for (int r = 0; r < 2; r++) {
        float blk[32];
        memcpy(blk, x + r * 45, 32 * sizeof(float));
        mxa_fake_quantize_block(blk, 32, mxa_rule_uos());
        for (int i = 0; i < 32; i++) assert_true(y[r * 45 + i] == blk[i]);
        float tail[13];
        memcpy(tail, x + r * 45 + 32, sizeof tail);
        mxa_fake_quantize_block(tail, 13, mxa_rule_uos());
        for (int i = 0; i < 13; i++) assert_true(y[r * 45 + 32 + i] == tail[i]);
    }
    assert_int_equal(mxa_dequantize(NULL, scales, 2, 45, y), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_dequantize(codes, scales, 0, 45, y), MXA_ERR_INVALID_ARGUMENT);
    assert_true(strlen(mxa_last_error_message()) > 0);
}

/* UOS: e_OCP <= e_UOS <= e_TFS <= e_OCP + 1 for every magnitude. */
static void test_rule_ordering(void **state)
{
    (void)state;
    tu_rng rng = {99};
    for (int i = 0; i < 200000; i++) {
        float m = fabsf(random_float(&rng, -126, 127));
        int o = mxa_shared_exponent(m, mxa_rule_ocp()), u = mxa_shared_exponent(m, mxa_rule_uos()),
            t = mxa_shared_exponent(m, mxa_rule_tfs());
        assert_true(o <= u && u <= t && t <= o + 1);
    }
}

static void test_rule_parse(void **state)
{
    (void)state;
    mxa_rule r;
    char name[32];
    assert_int_equal(mxa_rule_parse("uos", &r), MXA_OK);
    assert_true(r.kind == MXA_RULE_CEIL && r.q == 7.25f);
    assert_int_equal(mxa_rule_parse("q=6.5", &r), MXA_OK);
    assert_true(r.q == 6.5f);
    assert_int_equal(mxa_rule_name(r, name, sizeof name), MXA_OK);
    assert_string_equal(name, "q=6.5");
    assert_int_equal(mxa_rule_parse("q=8", &r), MXA_OK);
    const char *bad[] = {"q=9", "q=5.99", "q=", "q=7x", "UOS", "", "q=nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mxa_rule_parse(bad[i], &r), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_rule_parse(NULL, &r), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_rule_name((mxa_rule){MXA_RULE_CEIL, 9.0f}, name, sizeof name), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_rule_name(mxa_rule_tfs(), name, 2), MXA_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_vectors),
        cmocka_unit_test(test_uos_fraction_boundary),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_random_blocks),
        cmocka_unit_test(test_decode_and_dequantize),
        cmocka_unit_test(test_rule_ordering),
        cmocka_unit_test(test_rule_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
