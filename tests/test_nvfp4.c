/*
 * The NVFP4 baseline: E4M3 rounding, 16-element block quantization (vectors
 * derived by hand), and attention sanity (PNQ with V = ones, smoothing exact
 * without quantizers and helpful with a K channel bias, device routing).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/nvfp4.h"
#include "testutil.h"

/* ------------------------------------------------------------------ E4M3 */

static void test_e4m3_vectors(void **state)
{
    (void)state;
    static const struct {
        float y;
        uint8_t byte;
    } v[] = {
        {0.0f, 0x00},
        {1.0f, 0x38},              /* exponent 0 -> field 7 */
        {1.0625f, 0x38},           /* 8.5 quanta: tie to even 8 */
        {1.1875f, 0x3A},           /* 9.5 quanta: tie to even 10 (1.25) */
        {1.2f, 0x3A},
        {240.0f, 0x77},            /* 1.875 * 2^7 */
        {448.0f, 0x7E},            /* the maximum */
        {460.0f, 0x7E},            /* rounds down to 448 */
        {464.0f, 0x7E},            /* 14.5 quanta of 32: tie to even 14 (448) */
        {470.0f, 0x7E},            /* rounds to 480, not finite: saturates */
        {1e30f, 0x7E},
        {0.015625f, 0x08},         /* 2^-6, the smallest normal */
        {0.001953125f, 0x01},      /* 2^-9, the smallest subnormal */
        {0.0009765625f, 0x00},     /* 2^-10: tie between 0 and 2^-9 -> 0 */
        {0.0029296875f, 0x02},     /* 1.5 * 2^-9: tie -> 2 * 2^-9 */
        {0.0146484375f, 0x08},     /* 7.5 * 2^-9: tie -> 8 * 2^-9 = 2^-6 */
        {0.8333333f, 0x35},        /* 13.33 quanta of 2^-4 -> 13/16 */
        {403.2f, 0x7D},            /* 12.6 quanta of 32 -> 416 */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t b = mxa_e4m3_encode(v[i].y);
        if (b != v[i].byte) fail_msg("E4M3(%g) = 0x%02X, expected 0x%02X", (double)v[i].y, b, v[i].byte);
    }
    assert_true(isnan(mxa_e4m3_decode(0x7F)));
    assert_int_equal(mxa_e4m3_encode(NAN), 0x7F);
    assert_true(mxa_e4m3_decode(0xB8) == -1.0f);
    /* Every finite byte round-trips, and the values increase with the byte. */
    float prev = -1.0f;
    for (int b = 0; b <= 0x7E; b++) {
        float y = mxa_e4m3_decode((uint8_t)b);
        assert_int_equal(mxa_e4m3_encode(y), b);
        assert_true(y > prev);
        prev = y;
    }
    assert_true(prev == 448.0f);
}

/* ------------------------------------------------------------- blocks */

static void test_block_vectors(void **state)
{
    (void)state;
    uint8_t codes[MXA_NVFP4_BLOCK], scale;
    assert_true(mxa_nvfp4_tensor_scale(2688.0f) == 1.0f);
    assert_true(mxa_nvfp4_tensor_scale(0.0f) == 1.0f);

    /* ts = 1, max 6: scale 6/6 = 1 (0x38); elements round as E2M1 (ties to even). */
    const float a[6] = {6.0f, 3.0f, -1.5f, 0.25f, 0.75f, 5.5f};
    const uint8_t ca[6] = {7, 5, 0xB, 0, 2, 7};
    mxa_nvfp4_quantize_block(a, 6, 1.0f, codes, &scale);
    assert_int_equal(scale, 0x38);
    for (int i = 0; i < 6; i++) assert_int_equal(codes[i], ca[i]);
    for (int i = 6; i < 16; i++) assert_int_equal(codes[i], 0);

    /* ts = 1, max 5: 5/6 rounds to 13/16 = 0.8125 (0x35); 5/0.8125 = 6.15 -> 6,
     * 1/0.8125 = 1.23 -> 1, 0.2/0.8125 = 0.246 -> 0. */
    const float b[3] = {5.0f, 1.0f, 0.2f};
    mxa_nvfp4_quantize_block(b, 3, 1.0f, codes, &scale);
    assert_int_equal(scale, 0x35);
    assert_int_equal(codes[0], 7);
    assert_int_equal(codes[1], 2);
    assert_int_equal(codes[2], 0);
    assert_true(mxa_nvfp4_decode(codes[0], scale, 1.0f) == 4.875f);
    assert_true(mxa_nvfp4_decode(codes[1], scale, 1.0f) == 0.8125f);

    /* P~ with the tensor scale 1/2688: max 0.9 -> 0.9*448 = 403.2 -> 416 (0x7D);
     * 0.9*2688/416 = 5.8 -> 6: decodes to 6*416/2688 = 0.928571. */
    const float c[2] = {0.9f, 1e-3f};
    const float ts = mxa_nvfp4_tensor_scale(1.0f);
    mxa_nvfp4_quantize_block(c, 2, ts, codes, &scale);
    assert_int_equal(scale, 0x7D);
    assert_int_equal(codes[0], 7);
    assert_int_equal(codes[1], 0); /* 1e-3 * 2688/416 = 0.0065 -> 0 */
    assert_true(fabsf(mxa_nvfp4_decode(codes[0], scale, ts) - 0.9285714f) < 1e-6f);

    /* The row maximum 1 is exact under ts = 1/2688 (scale 448, code 6). */
    const float one = 1.0f;
    mxa_nvfp4_quantize_block(&one, 1, ts, codes, &scale);
    assert_int_equal(scale, 0x7E);
    assert_int_equal(codes[0], 7);
    assert_true(fabsf(mxa_nvfp4_decode(codes[0], scale, ts) - 1.0f) <= 1.2e-7f);

    /* Underflow: max 1e-4 under ts = 1 needs a scale below 2^-10: zero block, signs kept. */
    const float d[2] = {1e-4f, -5e-5f};
    mxa_nvfp4_quantize_block(d, 2, 1.0f, codes, &scale);
    assert_int_equal(scale, 0);
    assert_int_equal(codes[0], 0);
    assert_int_equal(codes[1], 8);
    assert_true(mxa_nvfp4_decode(codes[1], scale, 1.0f) == 0.0f);

    /* Non-finite: a NaN block. */
    const float e[2] = {1.0f, NAN};
    mxa_nvfp4_quantize_block(e, 2, 1.0f, codes, &scale);
    assert_int_equal(scale, 0x7F);
    assert_true(isnan(mxa_nvfp4_decode(codes[0], scale, 1.0f)));
}

static void test_sixteen_element_blocks(void **state)
{
    (void)state;
    /* 32 values: block 0 holds 6 (scale 1), block 1 holds 3 and 0.25 (scale
     * 0.5): both exact there, though 0.25 would vanish next to the 6. */
    float x[32] = {0};
    x[0] = 6.0f;
    x[16] = 3.0f;
    x[17] = 0.25f;
    x[1] = 0.25f;
    mxa_nvfp4_fake_quantize(x, 32, 1.0f);
    assert_true(x[0] == 6.0f);
    assert_true(x[1] == 0.0f);
    assert_true(x[16] == 3.0f);
    assert_true(x[17] == 0.25f);
    /* Strided: the same along a column of a [32, 2] matrix. */
    float y[64] = {0};
    y[0] = 6.0f;
    y[2] = 0.25f;
    y[32] = 3.0f;
    y[34] = 0.25f;
    mxa_nvfp4_fake_quantize_strided(y, 32, 2, 1.0f);
    assert_true(y[0] == 6.0f && y[2] == 0.0f && y[32] == 3.0f && y[34] == 0.25f);
}

/* ------------------------------------------------------------ attention */

enum { B = 1, H = 2, N = 96, D = 64 };
#define NUMEL (B * H * N * D)

static mxa_attention_desc nvfp4_desc(int smooth, mxa_placement placement)
{
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, MXA_RECIPE_OCP_DIRECT), MXA_OK);
    desc.format = MXA_FORMAT_NVFP4;
    desc.smooth = smooth;
    desc.placement = placement;
    return desc;
}

static mxa_status run(const mxa_attention_desc *desc, float *q, float *k, float *v, float *o, float *lse,
                      int causal)
{
    mxa_attention_desc d = *desc;
    d.causal = causal;
    mxa_tensor tq = tu_tensor(q, B, H, N, D), tk = tu_tensor(k, B, H, N, D), tv = tu_tensor(v, B, H, N, D),
               to = tu_tensor(o, B, H, N, D), tl = tu_tensor(lse, B, H, N, 1);
    return mxa_reference_attention(&d, 64, &tq, &tk, &tv, &to, lse ? &tl : NULL, NULL);
}

static void test_pnq_with_ones(void **state)
{
    (void)state;
    float *q = malloc(NUMEL * 4), *k = malloc(NUMEL * 4), *v = malloc(NUMEL * 4), *o = malloc(NUMEL * 4);
    assert_non_null(q && k && v && o);
    tu_rng rng = {11};
    tu_fill_attention(&rng, q, k, v, B, H, H, N, N, D);
    for (int i = 0; i < NUMEL; i++) v[i] = 1.0f;
    for (int smooth = 0; smooth <= 1; smooth++)
        for (int causal = 0; causal <= 1; causal++) {
            mxa_attention_desc pnq = nvfp4_desc(smooth, MXA_PLACEMENT_PNQ);
            assert_int_equal(run(&pnq, q, k, v, o, NULL, causal), MXA_OK);
            for (int i = 0; i < NUMEL; i++)
                if (fabsf(o[i] - 1.0f) > 1e-6f) fail_msg("PNQ smooth=%d causal=%d: o[%d] = %.9g", smooth, causal, i, (double)o[i]);
            mxa_attention_desc direct = nvfp4_desc(smooth, MXA_PLACEMENT_DIRECT);
            assert_int_equal(run(&direct, q, k, v, o, NULL, causal), MXA_OK);
            double dev = 0.0;
            for (int i = 0; i < NUMEL; i++) dev = fmax(dev, fabs(o[i] - 1.0));
            assert_true(dev > 1e-3); /* direct placement does not keep the row sum */
        }
    free(q);
    free(k);
    free(v);
    free(o);
}

/* fp32 attention for comparisons. */
static void fp32_attention(float *q, float *k, float *v, float *o, float *lse, int causal)
{
    mxa_attention_desc fp;
    assert_int_equal(mxa_attention_desc_init(&fp, MXA_RECIPE_FP32), MXA_OK);
    assert_int_equal(run(&fp, q, k, v, o, lse, causal), MXA_OK);
}

static void test_smoothing_exact_without_quantizers(void **state)
{
    (void)state;
    float *q = malloc(NUMEL * 4), *k = malloc(NUMEL * 4), *v = malloc(NUMEL * 4), *o = malloc(NUMEL * 4),
          *ref = malloc(NUMEL * 4), *lse = malloc(B * H * N * 4), *lse_ref = malloc(B * H * N * 4);
    assert_non_null(q && k && v && o && ref && lse && lse_ref);
    tu_rng rng = {12};
    tu_fill_attention(&rng, q, k, v, B, H, H, N, N, D);
    for (int i = 0; i < NUMEL; i++) k[i] += (i % D) % 5 == 0 ? 4.0f : 0.0f;
    for (int causal = 0; causal <= 1; causal++) {
        fp32_attention(q, k, v, ref, lse_ref, causal);
        mxa_attention_desc d = nvfp4_desc(1, MXA_PLACEMENT_PNQ);
        d.quantize = 0; /* smoothing alone is exact for softmax */
        assert_int_equal(run(&d, q, k, v, o, lse, causal), MXA_OK);
        assert_true(tu_nmse(o, ref, NUMEL) < 1e-10);
        for (int r = 0; r < B * H * N; r++) assert_true(fabsf(lse[r] - lse_ref[r]) < 1e-4f * (1.0f + fabsf(lse_ref[r])));
    }
    free(q);
    free(k);
    free(v);
    free(o);
    free(ref);
    free(lse);
    free(lse_ref);
}

static void test_smoothing_helps_with_k_bias(void **state)
{
    (void)state;
    float *q = malloc(NUMEL * 4), *k = malloc(NUMEL * 4), *v = malloc(NUMEL * 4), *o = malloc(NUMEL * 4),
          *ref = malloc(NUMEL * 4);
    assert_non_null(q && k && v && o && ref);
    tu_rng rng = {13};
    tu_fill_attention(&rng, q, k, v, B, H, H, N, N, D);
    /* A large per-channel K bias (as real keys have): it sets K's amax and
     * block scales while carrying no information for softmax. */
    for (int i = 0; i < NUMEL; i++) k[i] += (i % D) % 8 == 1 ? 12.0f : 0.0f;
    fp32_attention(q, k, v, ref, NULL, 0);
    mxa_attention_desc plain = nvfp4_desc(0, MXA_PLACEMENT_DIRECT), smooth = nvfp4_desc(1, MXA_PLACEMENT_DIRECT);
    assert_int_equal(run(&plain, q, k, v, o, NULL, 0), MXA_OK);
    const double e_plain = tu_nmse(o, ref, NUMEL);
    assert_int_equal(run(&smooth, q, k, v, o, NULL, 0), MXA_OK);
    const double e_smooth = tu_nmse(o, ref, NUMEL);
    print_message("NVFP4 NMSE with a K channel bias: plain %.3e, smooth %.3e\n", e_plain, e_smooth);
    assert_true(e_plain > 0.0 && e_plain < 0.5);
    assert_true(e_smooth < 0.5 * e_plain);
    free(q);
    free(k);
    free(v);
    free(o);
    free(ref);
}

static void test_cpu_device_routes_to_reference(void **state)
{
    (void)state;
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    assert_int_equal(mxa_runtime_create(NULL, &rt), MXA_OK);
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    float *q = malloc(NUMEL * 4), *k = malloc(NUMEL * 4), *v = malloc(NUMEL * 4), *o = malloc(NUMEL * 4),
          *ref = malloc(NUMEL * 4);
    assert_non_null(q && k && v && o && ref);
    tu_rng rng = {14};
    tu_fill_attention(&rng, q, k, v, B, H, H, N, N, D);
    mxa_attention_desc d = nvfp4_desc(1, MXA_PLACEMENT_DIRECT);
    d.bc = 64;
    assert_int_equal(run(&d, q, k, v, ref, NULL, 0), MXA_OK);
    mxa_tensor tq = tu_tensor(q, B, H, N, D), tk = tu_tensor(k, B, H, N, D), tv = tu_tensor(v, B, H, N, D),
               to = tu_tensor(o, B, H, N, D);
    mxa_attention_info info;
    assert_int_equal(mxa_attention(dev, &d, &tq, &tk, &tv, &to, NULL, &info), MXA_OK);
    assert_string_equal(info.variant, "reference-nvfp4");
    assert_memory_equal(o, ref, NUMEL * 4);
    /* The same through device buffers. */
    mxa_buffer *bq = NULL, *bo = NULL;
    assert_int_equal(mxa_buffer_create(dev, NUMEL * 4, &bq), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, NUMEL * 4, &bo), MXA_OK);
    assert_int_equal(mxa_buffer_upload(bq, 0, q, NUMEL * 4), MXA_OK);
    mxa_tensor dq = tq, dout = to;
    dq.data = NULL;
    dq.buffer = bq;
    dout.data = NULL;
    dout.buffer = bo;
    assert_int_equal(mxa_attention(dev, &d, &dq, &tk, &tv, &dout, NULL, NULL), MXA_OK);
    memset(o, 0, NUMEL * 4);
    assert_int_equal(mxa_buffer_download(bo, 0, o, NUMEL * 4), MXA_OK);
    assert_memory_equal(o, ref, NUMEL * 4);
    mxa_buffer_destroy(bq);
    mxa_buffer_destroy(bo);
    /* Smoothing is an NVFP4 switch only. */
    mxa_attention_desc bad;
    assert_int_equal(mxa_attention_desc_init(&bad, MXA_RECIPE_MXATTENTION), MXA_OK);
    bad.smooth = 1;
    assert_int_equal(mxa_attention(dev, &bad, &tq, &tk, &tv, &to, NULL, NULL), MXA_ERR_INVALID_ARGUMENT);
    free(q);
    free(k);
    free(v);
    free(o);
    free(ref);
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_vectors),
        cmocka_unit_test(test_block_vectors),
        cmocka_unit_test(test_sixteen_element_blocks),
        cmocka_unit_test(test_pnq_with_ones),
        cmocka_unit_test(test_smoothing_exact_without_quantizers),
        cmocka_unit_test(test_smoothing_helps_with_k_bias),
        cmocka_unit_test(test_cpu_device_routes_to_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
