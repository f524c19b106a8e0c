/*
 * Pre-quantized K/V (mxa_prepare_kv): on every device that takes them, attention on the
 * prepared K/V is bit-identical to attention on the float32 K and V, for each recipe that
 * quantizes, with GQA, causal alignments and key lengths; the prepared form is 7.5x
 * smaller than float32; mismatched descs and misuse get clear errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mxa/mxa.h"
#include "tests/common/testutil.h"

#define B 2
#define H 4
#define HKV 2
#define NQ 24
#define NK 70
#define D 64

static mxa_runtime *g_rt;
static float g_q[B * H * NQ * D], g_k[B * HKV * NK * D], g_v[B * HKV * NK * D];

static int setup(void **state)
{
    (void)state;
    tu_rng r = {29};
    tu_fill_attention(&r, g_q, g_k, g_v, B, H, HKV, NQ, NK, D);
    return mxa_runtime_create(NULL, &g_rt) == MXA_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mxa_runtime_destroy(g_rt);
    return 0;
}

/* The prepared path against the float32 path on one device: the same bytes, o and lse. */
static void same_bits(mxa_device *dev, const mxa_attention_desc *desc)
{
    static float o1[B * H * NQ * D], o2[B * H * NQ * D], l1[B * H * NQ], l2[B * H * NQ];
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, D), k = tu_tensor(g_k, B, HKV, NK, D), v = tu_tensor(g_v, B, HKV, NK, D);
    mxa_tensor t1 = tu_tensor(o1, B, H, NQ, D), t2 = tu_tensor(o2, B, H, NQ, D), tl1 = tu_tensor(l1, B, H, NQ, 1),
               tl2 = tu_tensor(l2, B, H, NQ, 1);
    assert_int_equal(mxa_attention(dev, desc, &q, &k, &v, &t1, &tl1, NULL), MXA_OK);
    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(dev, desc, &k, &v, &kv), MXA_OK);
    mxa_attention_desc with = *desc;
    with.kv = kv;
    memset(o2, 0xCD, sizeof o2);
    const mxa_status st = mxa_attention(dev, &with, &q, NULL, NULL, &t2, &tl2, NULL);
    if (st) fprintf(stderr, "attention with kv: %s\n", mxa_last_error_message());
    assert_int_equal(st, MXA_OK);
    assert_memory_equal(o1, o2, sizeof o1);
    assert_memory_equal(l1, l2, sizeof l1);
    mxa_kv_destroy(kv);
}

static void on_device(const char *id, int required)
{
    mxa_device *dev = NULL;
    if (mxa_device_open(g_rt, id, &dev) != MXA_OK) {
        assert_false(required);
        fprintf(stderr, "%s: not present, skipped\n", id);
        return;
    }
    static const int32_t lengths[B] = {NK - 13, 31};
    const mxa_recipe recipes[2] = {MXA_RECIPE_MXATTENTION, MXA_RECIPE_OCP_DIRECT};
    for (int r = 0; r < 2; r++)
        for (int variant = 0; variant < 3; variant++) {
            mxa_attention_desc desc;
            mxa_attention_desc_init(&desc, recipes[r]);
            if (variant == 1) desc.causal = MXA_CAUSAL_BOTTOM_RIGHT;
            if (variant == 2) {
                desc.causal = MXA_CAUSAL_TOP_LEFT;
                desc.key_lengths = lengths;
            }
            same_bits(dev, &desc);
        }
    mxa_device_close(dev);
}

static void test_cpu(void **state)
{
    (void)state;
    on_device("cpu", 1);
}

static void test_vulkan(void **state)
{
    (void)state;
    on_device("vulkan:0", 0);
}

static void test_size_and_misuse(void **state)
{
    (void)state;
    mxa_device *dev = NULL, *other = NULL;
    assert_int_equal(mxa_device_open(g_rt, "cpu", &dev), MXA_OK);
    assert_int_equal(mxa_device_open(g_rt, "cpu", &other), MXA_OK);
    mxa_tensor q = tu_tensor(g_q, B, H, NQ, D), k = tu_tensor(g_k, B, HKV, NK, D), v = tu_tensor(g_v, B, HKV, NK, D);
    static float o[B * H * NQ * D];
    mxa_tensor to = tu_tensor(o, B, H, NQ, D);
    mxa_attention_desc desc;
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k, &v, &kv), MXA_OK);
    size_t bytes = 0;
    mxa_kv *whole = NULL; /* 256 tokens: no padding to 32 */
    mxa_tensor k256 = tu_tensor(g_k, 1, 1, 256, D), v256 = tu_tensor(g_v, 1, 1, 256, D);
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k256, &v256, &whole), MXA_OK);
    assert_int_equal(mxa_kv_bytes(whole, &bytes), MXA_OK);
    const double fp32 = 2.0 * 256 * D * sizeof(float);
    fprintf(stderr, "prepared K/V: %zu bytes, %.2fx smaller than float32\n", bytes, fp32 / (double)bytes);
    assert_true(fp32 / (double)bytes > 7.4); /* 4.25 bits per value: 7.53x, less the parts' 256-byte alignment */
    mxa_kv_destroy(whole);
    mxa_attention_desc with = desc;
    with.kv = kv;
    assert_int_equal(mxa_attention(dev, &with, &q, &k, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "must be NULL"));
    assert_int_equal(mxa_attention(other, &with, &q, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "another device"));
    with.rule = mxa_rule_ocp();
    assert_int_equal(mxa_attention(dev, &with, &q, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    with.rule = desc.rule;
    with.hadamard = 0;
    assert_int_equal(mxa_attention(dev, &with, &q, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    with.hadamard = desc.hadamard;
    static const int32_t lengths[B] = {5, 6};
    with.key_lengths = lengths; /* prepared without: its V blocks were not cut there */
    assert_int_equal(mxa_attention(dev, &with, &q, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    with.key_lengths = NULL;
    mxa_tensor q_bad = tu_tensor(g_q, B, H, NQ, 32); /* D differs from the prepared K/V's */
    assert_int_equal(mxa_attention(dev, &with, &q_bad, NULL, NULL, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    mxa_attention_desc fp32_desc;
    mxa_attention_desc_init(&fp32_desc, MXA_RECIPE_FP32);
    mxa_kv *none = NULL;
    assert_int_equal(mxa_prepare_kv(dev, &fp32_desc, &k, &v, &none), MXA_ERR_UNSUPPORTED);
    assert_null(none);
    g_k[5] = 1.0f / 0.0f;
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k, &v, &none), MXA_ERR_NON_FINITE);
    g_k[5] = 0.5f;
    assert_null(none);
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k, NULL, &none), MXA_ERR_INVALID_ARGUMENT);
    assert_int_equal(mxa_kv_bytes(NULL, &bytes), MXA_ERR_INVALID_ARGUMENT);
    mxa_kv_destroy(NULL);
    mxa_kv_destroy(kv);
    mxa_device_close(dev);
    mxa_device_close(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cpu), cmocka_unit_test(test_vulkan),
                                       cmocka_unit_test(test_size_and_misuse)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
