/*
 * float16 and bfloat16 q, k, v in device buffers, on every device present: each backend
 * reads them as their exact float32 values, so attention gives the bytes of the same call
 * on float32 buffers of those values (output and lse), whether the tensor's offset allows
 * the prep kernels' vector loads or not; mxa_prepare_kv from them gives the K/V cache of the
 * float32 values. mxa_quantize (float32 buffers only) refuses them with one clear error.
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

#include "mxa/mxa.h"
#include "runtime/tensor.h"
#include "testutil.h"

enum { B = 1, H = 2, HKV = 1, NQ = 70, NK = 90, D = 64 };

static mxa_runtime *rt;

static int setup(void **state)
{
    (void)state;
    return mxa_runtime_create(NULL, &rt) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    mxa_runtime_destroy(rt);
    return 0;
}

/* n random values exactly representable in `dtype`, as float32 and as its 16-bit words */
static void values(mxa_dtype dtype, uint64_t seed, float scale, int64_t n, float *f, uint16_t *h)
{
    tu_rng g = {seed};
    for (int64_t i = 0; i < n; i++) {
        const float x = (float)((2.0 * tu_uniform(&g) - 1.0) * scale);
        h[i] = dtype == MXA_F16 ? mxa_f32_to_f16(x) : mxa_f32_to_bf16(x);
        f[i] = dtype == MXA_F16 ? mxa_f16_to_f32(h[i]) : mxa_bf16_to_f32(h[i]);
    }
    /* subnormal float16 (tiny bfloat16) values in both halves of a 32-bit word, one negative */
    const uint16_t tiny[3] = {0x0201, 0x0003, 0x83ff};
    for (int64_t i = 3; i < 6 && i < n; i++) {
        h[i] = dtype == MXA_F16 ? tiny[i - 3] : (uint16_t)(tiny[i - 3] & 0x807f);
        f[i] = dtype == MXA_F16 ? mxa_f16_to_f32(h[i]) : mxa_bf16_to_f32(h[i]);
    }
}

/* Attention of q, k, v (float32 values f) on dev from buffers of dtype dt (the 16-bit words
 * h for a 16-bit dtype) at element offset `at`; out/lse receive the results. */
static mxa_status run(mxa_device *dev, const mxa_attention_desc *desc, mxa_dtype dt, size_t at, float *const f[3],
                      uint16_t *const h[3], float *out, float *lse)
{
    const int64_t shape[3][4] = {{B, H, NQ, D}, {B, HKV, NK, D}, {B, HKV, NK, D}};
    const size_t es = mxa_dtype_size(dt);
    mxa_buffer *buf[3] = {NULL, NULL, NULL};
    mxa_tensor in[3], o, l;
    mxa_status st = MXA_OK;
    for (int i = 0; i < 3 && !st; i++) {
        const size_t n = (size_t)(shape[i][0] * shape[i][1] * shape[i][2] * shape[i][3]);
        if (!(st = mxa_buffer_create(dev, (n + at) * es, &buf[i])))
            st = mxa_buffer_upload(buf[i], at * es, dt == MXA_F32 ? (const void *)f[i] : (const void *)h[i], n * es);
        mxa_tensor_init(&in[i], dt, shape[i][0], shape[i][1], shape[i][2], shape[i][3], NULL);
        in[i].buffer = buf[i], in[i].offset = at * es;
    }
    mxa_tensor_init(&o, MXA_F32, B, H, NQ, D, out);
    mxa_tensor_init(&l, MXA_F32, B, H, NQ, 1, lse);
    if (!st) st = mxa_attention(dev, desc, &in[0], &in[1], &in[2], &o, &l, NULL);
    for (int i = 0; i < 3; i++) mxa_buffer_destroy(buf[i]);
    return st;
}

static void test_half_inputs_match_float32(void **state)
{
    (void)state;
    const int64_t nq = (int64_t)B * H * NQ * D, nk = (int64_t)B * HKV * NK * D;
    float *f[3] = {malloc((size_t)nq * 4), malloc((size_t)nk * 4), malloc((size_t)nk * 4)};
    uint16_t *h[3] = {malloc((size_t)nq * 2), malloc((size_t)nk * 2), malloc((size_t)nk * 2)};
    float *want = malloc((size_t)nq * 4), *got = malloc((size_t)nq * 4), want_lse[B * H * NQ], got_lse[B * H * NQ];
    int count = 0, checked = 0;
    assert_int_equal(mxa_device_count(rt, &count), MXA_OK);
    for (int di = 0; di < count; di++) {
        mxa_device_info info;
        mxa_device *dev;
        assert_int_equal(mxa_device_get_info(rt, di, &info), MXA_OK);
        if (mxa_device_open(rt, info.id, &dev)) continue; /* listed but not openable here: not this test's subject */
        const int before = checked;
        const mxa_dtype dts[2] = {MXA_F16, MXA_BF16};
        for (int t = 0; t < 4; t++) { /* f16, bf16, then both again with small values (float16: mostly subnormal) */
            const float s = t < 2 ? 1.0f : 1e-5f;
            values(dts[t % 2], 11 + (uint64_t)t, 3.0f * s, nq, f[0], h[0]);
            values(dts[t % 2], 12 + (uint64_t)t, 3.0f * s, nk, f[1], h[1]);
            values(dts[t % 2], 13 + (uint64_t)t, 2.0f * s, nk, f[2], h[2]);
            for (int causal = 0; causal < 2; causal++) {
                mxa_attention_desc desc;
                assert_int_equal(mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION), MXA_OK);
                desc.causal = causal ? MXA_CAUSAL_BOTTOM_RIGHT : MXA_CAUSAL_NONE;
                const mxa_status base = run(dev, &desc, MXA_F32, 4, f, h, want, want_lse);
                if (base == MXA_ERR_UNSUPPORTED) continue; /* a device that takes no device buffers at all */
                assert_int_equal(base, MXA_OK);
                for (size_t at = 0; at < 3; at += 2) { /* element offset 0: vector loads; 2: not a multiple of 4 */
                    const mxa_status st = run(dev, &desc, dts[t % 2], at, f, h, got, got_lse);
                    if (st == MXA_ERR_INVALID_ARGUMENT && strstr(mxa_last_error_message(), "must be float32")) continue;
                    if (st) fail_msg("%s %s offset %zu: %s", info.id, dts[t % 2] == MXA_F16 ? "f16" : "bf16", at,
                                     mxa_last_error_message());
                    assert_memory_equal(got, want, (size_t)nq * 4);
                    assert_memory_equal(got_lse, want_lse, sizeof want_lse);
                    checked++;
                }
            }
        }
        printf("%s (%s): %d cases equal\n", info.id, info.name, checked - before);
        mxa_device_close(dev);
    }
    assert_true(checked >= 16); /* the CPU device at least: 2 dtypes x 2 scales x 2 causal x 2 offsets */
    for (int i = 0; i < 3; i++) free(f[i]), free(h[i]);
    free(want), free(got);
}

/* A K/V cache prepared from 16-bit device buffers attends as the one from float32 buffers of
 * the same values, bit for bit. */
static void test_prepare_kv_half(void **state)
{
    (void)state;
    const int64_t nq = (int64_t)B * H * NQ * D, nk = (int64_t)B * HKV * NK * D;
    float *f[3] = {malloc((size_t)nq * 4), malloc((size_t)nk * 4), malloc((size_t)nk * 4)};
    uint16_t *h[3] = {malloc((size_t)nq * 2), malloc((size_t)nk * 2), malloc((size_t)nk * 2)};
    float *want = malloc((size_t)nq * 4), *got = malloc((size_t)nq * 4);
    mxa_device *dev;
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    const mxa_dtype dts[2] = {MXA_F16, MXA_BF16};
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 3; i++) values(dts[t], 21 + (uint64_t)(3 * t + i), 2.5f, i ? nk : nq, f[i], h[i]);
        float *outs[2] = {want, got};
        for (int pass = 0; pass < 2; pass++) { /* float32 buffers, then the 16-bit ones */
            const mxa_dtype dt = pass ? dts[t] : MXA_F32;
            const size_t es = mxa_dtype_size(dt);
            mxa_buffer *kb, *vb;
            assert_int_equal(mxa_buffer_create(dev, (size_t)nk * es, &kb), MXA_OK);
            assert_int_equal(mxa_buffer_create(dev, (size_t)nk * es, &vb), MXA_OK);
            assert_int_equal(mxa_buffer_upload(kb, 0, pass ? (const void *)h[1] : (const void *)f[1], (size_t)nk * es), MXA_OK);
            assert_int_equal(mxa_buffer_upload(vb, 0, pass ? (const void *)h[2] : (const void *)f[2], (size_t)nk * es), MXA_OK);
            mxa_tensor q, k, v, o;
            mxa_tensor_init(&q, MXA_F32, B, H, NQ, D, f[0]);
            mxa_tensor_init(&k, dt, B, HKV, NK, D, NULL);
            mxa_tensor_init(&v, dt, B, HKV, NK, D, NULL);
            k.buffer = kb, v.buffer = vb;
            mxa_tensor_init(&o, MXA_F32, B, H, NQ, D, outs[pass]);
            mxa_attention_desc desc;
            assert_int_equal(mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION), MXA_OK);
            mxa_kv *kv;
            assert_int_equal(mxa_prepare_kv(dev, &desc, &k, &v, &kv), MXA_OK);
            desc.kv = kv;
            assert_int_equal(mxa_attention(dev, &desc, &q, NULL, NULL, &o, NULL, NULL), MXA_OK);
            mxa_kv_destroy(kv);
            mxa_buffer_destroy(kb), mxa_buffer_destroy(vb);
        }
        assert_memory_equal(got, want, (size_t)nq * 4);
    }
    mxa_device_close(dev);
    for (int i = 0; i < 3; i++) free(f[i]), free(h[i]);
    free(want), free(got);
}

/* mxa_quantize takes float32 buffers only: a 16-bit one gets one error naming the dtype. */
static void test_quantize_refuses_half(void **state)
{
    (void)state;
    mxa_device *dev;
    mxa_buffer *buf;
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, 64 * 2, &buf), MXA_OK);
    mxa_tensor x;
    mxa_tensor_init(&x, MXA_F16, 1, 1, 2, 32, NULL);
    x.buffer = buf;
    uint8_t codes[64], scales[2];
    assert_int_equal(mxa_quantize(dev, &x, mxa_rule_uos(), codes, scales), MXA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mxa_last_error_message(), "float32"));
    mxa_buffer_destroy(buf);
    mxa_device_close(dev);
}

/* mxa_prepare_kv takes float32, float16 and bfloat16 device buffers (it widens any dtype but
 * float32 as 16-bit): a bool one is refused before that, with one error and no cache. */
static void test_prepare_kv_refuses_bool(void **state)
{
    (void)state;
    mxa_device *dev;
    mxa_buffer *kb, *vb;
    assert_int_equal(mxa_device_open(rt, "cpu", &dev), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, (size_t)B * HKV * NK * D, &kb), MXA_OK);
    assert_int_equal(mxa_buffer_create(dev, (size_t)B * HKV * NK * D * 4, &vb), MXA_OK);
    mxa_tensor k, v;
    mxa_tensor_init(&k, MXA_BOOL, B, HKV, NK, D, NULL);
    mxa_tensor_init(&v, MXA_F32, B, HKV, NK, D, NULL);
    k.buffer = kb, v.buffer = vb;
    mxa_attention_desc desc;
    assert_int_equal(mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION), MXA_OK);
    mxa_kv *kv = NULL;
    assert_int_equal(mxa_prepare_kv(dev, &desc, &k, &v, &kv), MXA_ERR_INVALID_ARGUMENT);
    assert_null(kv);
    assert_non_null(strstr(mxa_last_error_message(), "must be float tensors"));
    mxa_buffer_destroy(kb), mxa_buffer_destroy(vb);
    mxa_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_inputs_match_float32),
        cmocka_unit_test(test_prepare_kv_half),
        cmocka_unit_test(test_prepare_kv_refuses_bool),
        cmocka_unit_test(test_quantize_refuses_half),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
