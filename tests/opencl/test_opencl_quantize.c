/*
 * mxa_quantize on the OpenCL device must equal the CPU reference byte for
 * byte (SPEC section 3): every rule, every magnitude including subnormals,
 * every rounding boundary +- 1 ulp, zeros, -0, non-finite blocks, tails.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cl_test_common.h"
#include "testutil.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* rows x cols values: random magnitudes over the whole fp32 range, subnormals,
 * rounding boundaries of every E2M1 threshold and q 2^k +- 1 ulp. */
static void fill(tu_rng *r, float *x, int64_t rows, int64_t cols, float q)
{
    static const float bounds[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 4.0f, 8.0f};
    for (int64_t row = 0; row < rows; row++) {
        float *p = x + row * cols;
        const int kind = (int)(row % 6);
        const int e = (int)(tu_next(r) % 250) - 125;
        for (int64_t c = 0; c < cols; c++) {
            float v;
            switch (kind) {
            case 0: v = (float)tu_normal(r) * ldexpf(1.0f, e); break;
            case 1: v = from_bits((uint32_t)(tu_next(r) % 0x00800000u)); break; /* subnormal */
            case 2: { /* a threshold times 2^k, +- 1 ulp */
                float b = bounds[tu_next(r) % 10] * ldexpf(1.0f, e % 60);
                int u = (int)(tu_next(r) % 3) - 1;
                v = from_bits(to_bits(b) + (uint32_t)u);
                break;
            }
            case 3: v = (c % 32 == 0) ? q * ldexpf(1.0f, e % 60) : (float)tu_normal(r) * ldexpf(1.0f, e % 60 - 2); break;
            case 4: v = (tu_next(r) % 4 == 0) ? 0.0f : (tu_next(r) % 2 ? -0.0f : from_bits(to_bits(1.8125f) + (uint32_t)(tu_next(r) % 3))); break;
            default: v = from_bits((uint32_t)(tu_next(r) & 0x7f7fffffu)); break; /* any finite bit pattern */
            }
            if (tu_next(r) % 2) v = -v;
            p[c] = v;
        }
    }
    /* a few non-finite blocks */
    x[5 * cols + 3] = NAN;
    x[11 * cols + 40 % cols] = INFINITY;
    x[17 * cols] = -INFINITY;
}

static void compare(mxa_device *cl, mxa_device *cpu, const float *x, int64_t rows, int64_t cols, mxa_rule rule)
{
    const int64_t nb = (cols + 31) / 32;
    uint8_t *c1 = malloc((size_t)(rows * nb * 16)), *c2 = malloc((size_t)(rows * nb * 16));
    uint8_t *s1 = malloc((size_t)(rows * nb)), *s2 = malloc((size_t)(rows * nb));
    assert_non_null(c1);
    assert_non_null(c2);
    assert_non_null(s1);
    assert_non_null(s2);
    mxa_tensor t;
    assert_int_equal(mxa_tensor_init(&t, MXA_F32, 1, 1, rows, cols, (void *)x), MXA_OK);
    assert_int_equal(mxa_quantize(cl, &t, rule, c1, s1), MXA_OK);
    assert_int_equal(mxa_quantize(cpu, &t, rule, c2, s2), MXA_OK);
    int64_t bad = 0;
    for (int64_t i = 0; i < rows * nb; i++)
        if (s1[i] != s2[i] || memcmp(c1 + i * 16, c2 + i * 16, 16) != 0) {
            if (bad++ < 5)
                printf("# block %lld (row %lld): scale %02x vs %02x\n", (long long)i, (long long)(i / nb), s1[i], s2[i]);
        }
    char name[32];
    mxa_rule_name(rule, name, sizeof name);
    printf("# %s, %lld x %lld: %lld differing blocks\n", name, (long long)rows, (long long)cols, (long long)bad);
    assert_int_equal(bad, 0);
    free(c1);
    free(c2);
    free(s1);
    free(s2);
}

static void test_quantize_bit_exact(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *cl;
    if (!clt_open(NULL, &rt, &cl)) skip();
    mxa_device *cpu;
    assert_int_equal(mxa_device_open(rt, "cpu", &cpu), MXA_OK);
    mxa_rule rules[5] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos(), {MXA_RULE_CEIL, 8.0f}, {MXA_RULE_CEIL, 6.5f}};
    const int64_t shapes[3][2] = {{600, 128}, {240, 70}, {60, 31}};
    tu_rng r = {42};
    for (int s = 0; s < 3; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        float *x = malloc((size_t)(rows * cols) * sizeof(float));
        assert_non_null(x);
        for (int k = 0; k < 5; k++) {
            fill(&r, x, rows, cols, k == 0 ? 7.25f : rules[k].q);
            compare(cl, cpu, x, rows, cols, rules[k]);
        }
        free(x);
    }
    mxa_device_close(cpu);
    clt_close(rt, cl);
}

/* The vectors of SPEC section 1, through the device. */
static void test_quantize_spec_vectors(void **state)
{
    (void)state;
    mxa_runtime *rt;
    mxa_device *cl;
    if (!clt_open(NULL, &rt, &cl)) skip();
    float x[32] = {1.0f, -0.5f, 6.0f, -6.0f};
    uint8_t codes[16], scale;
    mxa_tensor t;
    mxa_tensor_init(&t, MXA_F32, 1, 1, 1, 32, x);
    assert_int_equal(mxa_quantize(cl, &t, mxa_rule_uos(), codes, &scale), MXA_OK);
    assert_int_equal(codes[0], 0x92);
    assert_int_equal(codes[1], 0xF7);
    assert_int_equal(scale, 0x7F);
    float y[32] = {from_bits(to_bits(1.8125f) + 1)};
    mxa_tensor_init(&t, MXA_F32, 1, 1, 1, 32, y);
    assert_int_equal(mxa_quantize(cl, &t, mxa_rule_uos(), codes, &scale), MXA_OK);
    assert_int_equal(scale, 127 - 1);
    assert_int_equal(codes[0], 6);
    float z[32] = {3.0f * ldexpf(1.0f, -128)}; /* subnormal: e = -127 */
    mxa_tensor_init(&t, MXA_F32, 1, 1, 1, 32, z);
    assert_int_equal(mxa_quantize(cl, &t, mxa_rule_ocp(), codes, &scale), MXA_OK);
    assert_int_equal(scale, 0);
    assert_int_equal(codes[0], 3);
    clt_close(rt, cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_spec_vectors),
        cmocka_unit_test(test_quantize_bit_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
