/* mxa_quantize on the Vulkan device is bit-exact with runtime/mxfp4.c, for every
 * rule, every magnitude (subnormal to FLT_MAX), rounding ties, rule boundaries
 * q * 2^k +- 1 ulp, non-finite blocks and row tails; from host and device memory. */
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
#include "testutil.h"
#include "vk_test_common.h"

static mxa_runtime *rt;
static mxa_device *dev;

static int setup(void **state)
{
    (void)state;
    if (!vkt_open(&rt, &dev)) return vkt_required() ? -1 : 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vkt_close();
    return 0;
}

/* Rows of hard cases: random magnitudes 2^-149..2^127, exact E2M1 ties, rule
 * boundaries, subnormals, signed zeros, NaN/Inf in some blocks. */
static void fill_hard(tu_rng *r, float *x, int64_t rows, int64_t cols)
{
    static const float rules_q[] = {6.0f, 7.25f, 6.5f, 8.0f, 7.0f};
    for (int64_t i = 0; i < rows * cols; i++) {
        const int kind = (int)(tu_next(r) % 10);
        const int e = (int)(tu_next(r) % 280) - 150;
        switch (kind) {
        case 0: x[i] = ldexpf((float)tu_normal(r), e); break;
        case 1: /* a tie: k/4 * 2^e */ x[i] = ldexpf((float)(1 + tu_next(r) % 24) * 0.25f, e / 4); break;
        case 2: { /* a rule boundary q * 2^k, +- 1 ulp */
            float b = ldexpf(rules_q[tu_next(r) % 5], e / 2);
            int step = (int)(tu_next(r) % 3) - 1;
            x[i] = step < 0 ? nextafterf(b, 0.0f) : step > 0 ? nextafterf(b, INFINITY) : b;
            break;
        }
        case 3: x[i] = ldexpf((float)tu_uniform(r), -126 - (int)(tu_next(r) % 24)); break; /* subnormal */
        case 4: x[i] = (tu_next(r) & 1) ? 0.0f : -0.0f; break;
        case 5: x[i] = (tu_next(r) % 50 == 0) ? ((tu_next(r) & 1) ? NAN : -INFINITY) : FLT_MAX; break;
        default: x[i] = (float)tu_normal(r) * ldexpf(1.0f, (int)(i / 32 % 40) - 20); break;
        }
        if (tu_next(r) & 1) x[i] = -x[i];
    }
}

static void check_rule(const float *x, int64_t rows, int64_t cols, mxa_rule rule, mxa_buffer *buf)
{
    const int64_t nb = (cols + 31) / 32;
    uint8_t *codes = malloc((size_t)(rows * nb * 16)), *scales = malloc((size_t)(rows * nb));
    uint8_t *want_c = malloc((size_t)(rows * nb * 16)), *want_s = malloc((size_t)(rows * nb));
    assert_non_null(codes);
    assert_non_null(scales);
    assert_non_null(want_c);
    assert_non_null(want_s);
    for (int64_t r = 0; r < rows; r++) mxa_quantize_row(x + r * cols, cols, rule, want_c + r * nb * 16, want_s + r * nb);
    mxa_tensor t = tu_tensor((float *)x, 1, 1, rows, cols);
    if (buf) {
        assert_int_equal(mxa_buffer_upload(buf, 0, x, (size_t)(rows * cols) * 4), MXA_OK);
        t.data = NULL;
        t.buffer = buf;
    }
    assert_int_equal(mxa_quantize(dev, &t, rule, codes, scales), MXA_OK);
    int64_t bad = 0;
    for (int64_t i = 0; i < rows * nb; i++) {
        int diff = want_s[i] != scales[i] || memcmp(want_c + i * 16, codes + i * 16, 16) != 0;
        if (diff && bad++ < 5)
            print_message("block %lld: scale %02x (want %02x), first value %a\n", (long long)i, scales[i], want_s[i],
                          (double)x[(i / nb) * cols + (i % nb) * 32]);
    }
    assert_int_equal(bad, 0);
    free(codes);
    free(scales);
    free(want_c);
    free(want_s);
}

static void test_quantize_exact(void **state)
{
    (void)state;
    if (!dev) skip();
    const int64_t shapes[][2] = {{97, 256}, {64, 48}, {33, 32}, {5, 1000}};
    mxa_rule rules[6] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos(), {MXA_RULE_CEIL, 6.5f}, {MXA_RULE_CEIL, 8.0f},
                         {MXA_RULE_CEIL, 7.0f}};
    tu_rng r = {1234};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        float *x = malloc((size_t)(rows * cols) * sizeof(float));
        assert_non_null(x);
        fill_hard(&r, x, rows, cols);
        for (int k = 0; k < 6; k++) check_rule(x, rows, cols, rules[k], NULL);
        free(x);
    }
}

static void test_quantize_spec_vectors(void **state)
{
    (void)state;
    if (!dev) skip();
    /* SPEC §1's table, one vector per row of 32 */
    const float v[][5] = {{6, 0.25f, 0.75f, 1.25f, 1.75f}, {6, 2.5f, 3.5f, 5, 5.5f}, {-6, -0.0f, -0.25f, -2.5f, 0.1f},
                          {1, 0.0625f, 0.1875f, 0.375f, 0}, {1.5f + 0x1p-23f, 0, 0, 0, 0}, {1.8125f, 0, 0, 0, 0},
                          {1.8125f + 0x1p-23f, 0, 0, 0, 0}, {7, 3, 0, 0, 0}, {8 - 0x1p-21f, 0, 0, 0, 0},
                          {3 * 0x1p-128f, 0, 0, 0, 0}, {FLT_MAX, 0, 0, 0, 0}, {0, -0.0f, 0, 0, 0}, {NAN, 1, 0, 0, 0},
                          {1, -0.5f, 6, -6, 0}};
    const int64_t rows = sizeof v / sizeof v[0];
    float x[sizeof v / sizeof v[0] * 32];
    memset(x, 0, sizeof x);
    for (int64_t i = 0; i < rows; i++) memcpy(x + i * 32, v[i], sizeof v[i]);
    mxa_rule rules[3] = {mxa_rule_ocp(), mxa_rule_tfs(), mxa_rule_uos()};
    for (int k = 0; k < 3; k++) check_rule(x, rows, 32, rules[k], NULL);
}

static void test_quantize_device_buffer(void **state)
{
    (void)state;
    if (!dev) skip();
    const int64_t rows = 40, cols = 128;
    float *x = malloc((size_t)(rows * cols) * sizeof(float)), *back = malloc((size_t)(rows * cols) * sizeof(float));
    assert_non_null(x);
    assert_non_null(back);
    tu_rng r = {99};
    fill_hard(&r, x, rows, cols);
    mxa_buffer *buf = NULL;
    assert_int_equal(mxa_buffer_create(dev, (size_t)(rows * cols) * 4, &buf), MXA_OK);
    check_rule(x, rows, cols, mxa_rule_uos(), buf);
    /* the buffer API round-trips bytes exactly, at an offset too */
    assert_int_equal(mxa_buffer_download(buf, 0, back, (size_t)(rows * cols) * 4), MXA_OK);
    assert_memory_equal(x, back, (size_t)(rows * cols) * 4);
    assert_int_equal(mxa_buffer_upload(buf, 64, x, 256), MXA_OK);
    assert_int_equal(mxa_buffer_download(buf, 64, back, 256), MXA_OK);
    assert_memory_equal(x, back, 256);
    assert_int_equal(mxa_buffer_download(buf, (size_t)(rows * cols) * 4 - 4, back, 8), MXA_ERR_INVALID_ARGUMENT);
    mxa_buffer_destroy(buf);
    free(x);
    free(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_spec_vectors),
        cmocka_unit_test(test_quantize_exact),
        cmocka_unit_test(test_quantize_device_buffer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
